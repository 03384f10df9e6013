"""Vanilla and S2AE on the object-VLM variants (chapter 15): does S2AE gain where attention is freer of raster order?

:mod:`compbook.sae.studies.objregions` trains tiny VLMs with 4 learned prefix tokens or a bidirectional patch block
(and the causal model, retrained the same way: the control). This module trains SAEs on their residual streams,
exactly as chapter 15's study does on the book's model: block ``LAYER`` on ``make_scenes(600, seed=10,
layout=...)``, 200 held-out scenes (seed 11), :data:`compbook.sae.studies.study.BASE` (d_sae 384, 900 steps of 16
images, lr 3e-3) at k = 32, vanilla and S2AE (lambda = 0.01) with the paper's 20 regions and the object-scale
counts of :data:`compbook.sae.studies.study.REGION_COUNTS`, five seeds. The 4 prefix tokens are not data: the SAE reads
the patches and the caption, as on the causal models (our choice; :func:`compbook.sae.vlm.extract` marks them -1).

Stored in ``data/sae/objsae/{layout}_prefix{n}_{causal|bidi}/`` (``k32/``, ``regions/n{n}/``) by
:func:`compbook.sae.experiment.stored_runs`, keyed by the training config and the data digest; a rerun resumes.
:func:`table` scores every SAE (EV, L0, mIoU, the slack, region purity, coherence under chapter 16's four
definitions, :mod:`compbook.sae.coherence`); :func:`reading` pairs S2AE with vanilla by seed per variant.

Command (about 15 s of one core per SAE; resumable; writes ``data/sae/objsae/table.json``)::

    nice -n 5 python -m compbook.sae objsae --layouts grid2 --regions 4 8
"""

from __future__ import annotations

import dataclasses
import time

import pandas as pd

from ... import checks
from ...stats import fmt_pm
from .. import experiment as ex, paper
from . import study as st
from .objregions import OBJECT_VLM_LAYOUTS, VARIANTS, stored_object_vlm
from ...results import door

STORE = "sae/objsae"
K, LAM = 32, 0.01
#: The coherence definitions read here (chapter 16's four; :data:`compbook.sae.coherence.DEFINITIONS`).
COHERENCE = ("word / live", "word / bimodal", "phrase / bimodal", "next token / bimodal")
COLUMNS = ("EV", "L0 patches", "mIoU", *COHERENCE)


def store_of(variant: str, layout: str, store: str = STORE) -> str:
    """Folder (under ``data/``) of the SAEs of one object-VLM variant and layout."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: expected one of {tuple(VARIANTS)}")
    checks.choice(layout, "layout", OBJECT_VLM_LAYOUTS)
    checks.safe_path("data", store, "store")
    n_prefix, bidi = VARIANTS[variant]
    return f"{store}/{layout}_prefix{n_prefix}_{'bidi' if bidi else 'causal'}"


def setting(variant: str, layout: str = "grid2", n_train: int = st.N_TRAIN, n_test: int = st.N_TEST,
            layer: int = st.LAYER, seed: int = 10) -> ex.Setting:
    """:func:`compbook.sae.experiment.load_setting` for a stored object-VLM variant (``text_only`` is None)."""
    from ..data import make_scenes

    from ..sources import note_source

    model, meta = stored_object_vlm(variant, layout)
    tr = make_scenes(n_train, seed=seed, layout=layout)
    te = make_scenes(n_test, seed=seed + 1, layout=layout)
    source = {"source": "object-vlm", "variant": variant, "layout": layout, "n": int(n_train), "seed": int(seed),
              "layer": int(layer)}
    train = note_source(ex.sae_inputs(model, tr, layer), source)
    return ex.Setting(model, None, meta, tr, te, train, ex.sae_inputs(model, te, layer), layer, source)


def variant_runs(s: ex.Setting, variant: str, layout: str, counts=st.REGION_COUNTS, seeds=st.SEEDS,
                 base=st.BASE, k: int = K, lam: float = LAM, store: str = STORE, retrain: bool = False,
                 log=None, **options) -> list:
    """Vanilla, S2AE with the paper's regions and with each count of ``counts`` on the variant's activations
    (:func:`compbook.sae.studies.study.region_runs` with this variant's store); ``counts=()``: the first two only.
    ``options``: where the sweep runs (:func:`compbook.runs.sweeps.run`'s)."""
    where = store_of(variant, layout, store)
    if counts:
        return st.region_runs(s.train, counts, k, lam, seeds, base, where, retrain=retrain, log=log, **options)
    runs = st.study_runs(s.train, dataclasses.replace(base, k=int(k), n_regions=None), (k,), (0.0, lam), seeds,
                         where, retrain=retrain, **options)
    n_paper = min(paper.REGIONS, len(s.train.patch_idx))
    for r in runs:
        r["regions"] = n_paper if r["lam"] else 0
        r["method"] = f"S2AE, {n_paper} regions" if r["lam"] else "vanilla"
    return runs


def variant_table(runs: list, s: ex.Setting, top_n: int = 20) -> pd.DataFrame:
    """:func:`compbook.sae.studies.study.region_table` rows plus coherence under chapter 16's four definitions."""
    from ..coherence import coherence_table

    df = st.region_table(runs, s.test, s.test_scenes.masks, s.test_scenes.labels)
    coh = coherence_table(runs, s.test, s.test_scenes, top_n=top_n)
    for c in COHERENCE:
        df[c] = coh[c].to_numpy()
    return df


def table(layouts=("grid2",), variants=tuple(VARIANTS), counts=st.REGION_COUNTS, seeds=st.SEEDS,
          base=st.BASE, k: int = K, store: str = STORE, retrain: bool = False, log=None, n_train: int = st.N_TRAIN,
          n_test: int = st.N_TEST, layer: int = st.LAYER, **options) -> pd.DataFrame:
    """One row per SAE of every (layout, variant): :func:`variant_table` with ``layout``, ``variant`` and the
    variant's concept-word accuracy (activations of :func:`setting` ``(variant, layout, n_train, n_test,
    layer)``; ``options``: where the sweep runs, :func:`compbook.runs.sweeps.run`'s)."""
    parts = []
    for layout in layouts:
        for variant in variants:
            t0 = time.perf_counter()
            s = setting(variant, layout, n_train, n_test, layer)
            runs = variant_runs(s, variant, layout, counts, seeds, base, k=k, store=store, retrain=retrain,
                                **options)
            df = variant_table(runs, s)
            df.insert(0, "variant", variant)
            df.insert(0, "layout", layout)
            df["concept-word accuracy"] = s.meta["accuracy"]["concept words"]
            parts.append(df)
            if log:
                log(f"{layout}, {variant}: {len(runs)} SAEs ({df['train s'].sum():.0f} s of training when "
                    f"trained) scored in {time.perf_counter() - t0:.0f} s")
    return pd.concat(parts, ignore_index=True)


def reading(df: pd.DataFrame, columns=COLUMNS) -> pd.DataFrame:
    """S2AE - vanilla paired by seed per (layout, variant, regions) of :func:`table`'s ``df``: seeds, region
    purity, and ``(mean, 95% half-width)`` per column of ``columns`` as "+0.012 ± 0.004"."""
    st._columns(df, "df", ("layout", "variant", "regions", "method", "seed", "purity (regions)", *columns))
    rows = []
    for (layout, variant), g in df.groupby(["layout", "variant"], sort=False):
        van = g[g.method == "vanilla"]
        for n, h in g[g.regions > 0].groupby("regions", sort=True):
            both = pd.concat([van, h])
            row = {"layout": layout, "variant": variant, "regions": int(n), "seeds": len(h),
                   "purity": float(h["purity (regions)"].iloc[0])}
            for c in columns:
                m, w = ex.paired_difference(both, c, "vanilla", h.method.iloc[0])
                row[c] = fmt_pm(m, w, signed=True)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["layout", "variant", "regions"])


def paired_rows(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Numeric S2AE - vanilla of ``column`` per (layout, variant, regions): columns ``mean``, ``half``."""
    st._columns(df, "df", ("layout", "variant", "regions", "method", "seed", column))
    rows = []
    for (layout, variant), g in df.groupby(["layout", "variant"], sort=False):
        van = g[g.method == "vanilla"]
        for n, h in g[g.regions > 0].groupby("regions", sort=True):
            m, w = ex.paired_difference(pd.concat([van, h]), column, "vanilla", h.method.iloc[0])
            rows.append({"layout": layout, "variant": variant, "regions": int(n), "mean": m, "half": w})
    return pd.DataFrame(rows)


def merge_table(df: pd.DataFrame, relative: str = f"{STORE}/table.json") -> pd.DataFrame:
    """``df`` with the stored table's rows of the layouts ``df`` does not hold (a run per layout adds to it)."""

    if not door.is_stored(door.made_path(relative, "relative")):
        return df
    old = st.read_table(relative)
    return pd.concat([old[~old.layout.isin(set(df.layout))], df], ignore_index=True)


def run(layouts=("grid2",), counts=st.REGION_COUNTS, n_seeds: int = len(st.SEEDS), retrain: bool = False,
        variants=tuple(VARIANTS), **options) -> pd.DataFrame:
    """Train (or load) and score every variant's SAEs, write ``data/sae/objsae/table.json``, print the reading
    (``python -m compbook.sae objsae``); ``options``: where the sweep runs (:func:`compbook.runs.sweeps.run`'s)."""
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    df = merge_table(table(layouts, variants, counts, tuple(range(n_seeds)), retrain=retrain, log=log, **options))
    log(f"wrote {st.write_table(df, f'{STORE}/table.json', extend=True)}")
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(reading(df).T)
    return df
