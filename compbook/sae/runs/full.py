"""Every SAE chapters 15 and 16 train, in one command, at the mode's size (a GPU reader's full-mode run).

:class:`compbook.sae.sizes.PartCRun` holds the sizes (Part C's one size table: CPU defaults, ``full()`` the
paper-scale miniature) and :data:`compbook.sae.sizes.TINY` a seconds-long check. :func:`run` trains (or loads:
every SAE is stored by :func:`compbook.sae.experiment.stored_runs`, keyed by config and data digest, so a rerun
resumes) and scores:

Every SAE trains through the sweep runner (:mod:`compbook.sae.runs.tasks`, :mod:`compbook.runs.sweeps`;
``--backend ray`` runs them on a cluster):

1. the k / lambda study (:mod:`compbook.sae.studies.study`) and the choice of k;
2. the reference optimiser at that k (:mod:`compbook.sae.studies.refopt`);
3. S2AE with object-scale region counts at that k;
4. vanilla and S2AE on the object-VLM variants (:mod:`compbook.sae.studies.objsae`);
5. coherence, monosemanticity and identification rates (chapter 16) at that k;
6. the claims table (:mod:`compbook.sae.studies.claims`),

and writes each table to ``data/<store>/`` (``study.json``, ``optimiser.json``, ``regions.json``,
``objsae.json``, ``coherence.json``, ``identification.json``, ``claims.json``). SAEs train on
:func:`compbook.config.device` (a GPU under ``COMPBOOK_MODE=full`` where there is one). Chapters 15 and 16 in full
mode read their SAEs from the same stores (``sae/full/...``)::

    COMPBOOK_MODE=full python -m compbook.sae full          # the full-mode run (GPU)
    python -m compbook.sae full --tiny                      # the same code at a toy size, seconds on a CPU
"""

from __future__ import annotations

import dataclasses
import json
import time

import pandas as pd

from ... import checks, results
from ..sizes import PartCRun
from ...results import door


def sizes_of(cfg: PartCRun) -> dict:
    """``cfg``'s fields as JSON values (what a stored table records and a reader compares)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def table(cfg: PartCRun, name: str, log=print) -> pd.DataFrame:
    """The stored table ``name`` ("study", "optimiser", "regions", "objsae") at ``cfg``'s sizes, as chapters 15-16
    and Part C's notes read it. The CPU store's tables are committed; another store's (full mode: ``sae/full``)
    is the one :func:`run` wrote for exactly these sizes, made here first when it is missing or was written for
    other sizes (every SAE of :func:`run` is stored as it is trained, so a rerun resumes; the same as
    ``COMPBOOK_MODE=full python -m compbook.sae full``)."""
    from ..studies import study as st
    checks.instance(cfg, "cfg", PartCRun)
    relative = cfg.table(name)
    if cfg.store != PartCRun.store:
        door.stored_or_made(relative, sizes_of(cfg), lambda: run(cfg, log=log), recorded=_recorded_sizes,
                            stale="remake", command=FULL_COMMAND, log=log)
    return st.read_table(relative)


def chapter15_saes(sizes: PartCRun, train) -> tuple[int, list]:
    """Chapter 16: chapter 15's SAEs at ``sizes``: the k chapter 15 chose (``choose_k`` on :func:`table`
    "study") and :func:`compbook.sae.studies.study.study_runs` at that k for vanilla and S2AE (the paper's lambda),
    every seed of ``sizes``, loaded from ``sizes.store`` (trained there first when missing). ``train``: the SAEs'
    training vectors (an ``SAEData``). Returns (k, runs)."""
    from ..s2ae import LAMBDA
    from ..studies import study as st

    checks.instance(sizes, "sizes", PartCRun)
    k = st.choose_k(table(sizes, "study"))
    return k, st.study_runs(train, sizes.base(), (k,), (0.0, LAMBDA), tuple(range(sizes.seeds)), sizes.store)


#: the command that makes every table of a store
FULL_COMMAND = "COMPBOOK_MODE=full python -m compbook.sae full"


def _recorded_sizes(path):
    """The sizes a stored table was made for (its ``sizes``; None when it records none)."""
    return results.json_file(path, f"stored table {path.name}").get("sizes")


def run(cfg: PartCRun, retrain: bool = False, log=print, **options) -> dict:
    """Train (or load) and score everything (see the module docstring); returns the tables by name. Every SAE
    trains through the sweep runner: ``options`` say where (:func:`compbook.runs.sweeps.run`'s backend, address,
    workers, retries, per_task; default: this process)."""
    from ..studies import claims
    from .. import coherence as co, crossmodal as cm, describe as de
    from .. import experiment as ex, interpret as ip
    from ..studies import objsae, study as st

    t0 = time.perf_counter()

    def say(msg):
        if log:
            log(f"[{time.perf_counter() - t0:7.1f} s] {msg}")

    seeds, base, store = tuple(range(cfg.seeds)), cfg.base(), cfg.store
    s = ex.load_setting(cfg.n_train, cfg.n_test, cfg.layer)
    masks, labels = s.test_scenes.masks, s.test_scenes.labels
    runs = st.study_runs(s.train, base, cfg.ks, cfg.lams, seeds, store, retrain=retrain, log=say, **options)
    out = {"study": st.study_table(runs, s.test, masks)}
    k = st.choose_k(out["study"])
    say(f"study: {len(runs)} SAEs, chosen k = {k}")
    ref = st.reference_runs(s.train, k, seeds, base=base, store=store, retrain=retrain, **options)
    out["optimiser"] = st.optimiser_table(runs, ref, k, s.test, masks)
    reg = st.region_runs(s.train, cfg.counts, k, 0.01, seeds, base, store, retrain=retrain, log=say,
                         **options)
    out["regions"] = st.region_table(reg, s.test, masks, labels)
    out["objsae"] = objsae.table(cfg.layouts, counts=cfg.counts, seeds=seeds, base=base, k=k,
                                 store=cfg.objsae_store, retrain=retrain, log=say, n_train=cfg.n_train,
                                 n_test=cfg.n_test, layer=cfg.layer, **options)
    at_k = [r for r in runs if r["k"] == k and r["lam"] in (0.0, 0.01)]
    scenes = s.test_scenes
    coh = co.coherence_table(at_k, s.test, scenes, top_n=cfg.top_n)
    cross = cm.compare_crossmodal(at_k, s.test, cm.concept_labels(scenes), top_n=cfg.top_n)
    out["coherence"] = coh.merge(cross[["method", "seed", "mono image", "mono text"]])
    tables = ip.interpret_runs(at_k, s.test, scenes, de.PixelDescriber(), de.MajoritySynthesiser(),
                               min_images=cfg.top_k, top_k=cfg.top_k)
    out["identification"] = ip.identification_table(tables)
    say("chapter 16's measures scored")
    out["claims"] = claims.table(out["study"], out["regions"], out["objsae"], out["coherence"],
                                 out["identification"], k=k)
    for name, df in out.items():
        st.write_table(df, f"{store}/tables/{name}.json", sizes=sizes_of(cfg))
    say(f"wrote {len(out)} tables to data/{store}/tables/")
    return out


def show(out: dict) -> None:
    """Print the claims table of :func:`run`'s tables."""
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 60):
        print(out["claims"].drop(columns="paper").to_string())
