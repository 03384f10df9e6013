"""The coverage sweep: controlled models at many coverages, seeds and object-space sizes (chapter 13).

``python -m compbook.binding sweep`` trains the sweep batched (stacks of same-size models, on the runner
:mod:`compbook.runs.sweeps`: :mod:`compbook.binding.runs.tasks`), keeps each model's validation-selected weights, then
reads each model's unseen-object recognition on *test* scenes (held-out objects only, every object of the space
a candidate) and fits the three probes of :mod:`compbook.binding.probes` to its scene embeddings (fitted on
train scenes, R^2 on test scenes). Results go to ``data/binding/controlled_V{V}.safetensors`` (stacked weights)
and ``.json`` (config, coverages, seeds, validation history, test recognition, probe fits, timings).
:func:`load_sweep` reads them back, :func:`load_sweeps` every size of a sweep (stored, else trained:
:func:`compbook.results.door.stored_or_made`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np

from ...results import checkpoints
from ... import checks, config, results
from ..controlled import ControlledConfig, subsample, swap_recognition, train_controlled
from ..probes import PROBE_KINDS
from ..recipe.model import store_dir
from ..splits import coverage_split
from .scoring import (
    FORMAT, MAX_SCENES, SweepConfig, check_coverages, default_sweep, needs_binding, probe_fits,
    sweep_splits, test_binding, test_recognition, test_scenes, test_scores
)
from ...results import door


def run_size(sweep: SweepConfig, cfg: ControlledConfig, out_dir=None, progress: bool = True, store=None,
             command: str | None = None, **options) -> dict:
    """Train, select, test and probe one object-space size (the models of ``sweep``'s coverages x seeds at
    ``cfg``); save when ``out_dir``; returns the record (with ``params``, the stacked weights).

    The models run on the runner :mod:`compbook.runs.sweeps` (:func:`compbook.binding.runs.tasks.coverage_sweep`: stacks
    of same-size models, ``options`` its ``backend``, ``address``, ``workers``, ``retries``, ``per_task``), each model's
    record kept in ``store`` (None: a temporary folder, removed after; models stored there are not trained again), then
    assembled into the one record and stacked checkpoint ``controlled_V{V}`` of before
    (:func:`compbook.binding.runs.tasks.assemble_size`; ``train_seconds``: the runner's seconds in this call, training
    and scoring the models not found stored). ``command``: the ``made_by`` of the per-model records."""
    from .tasks import assemble_size, run_coverage
    checks.instance(sweep, "sweep", SweepConfig)
    checks.instance(cfg, "cfg", ControlledConfig)
    if out_dir is not None:
        if not isinstance(out_dir, (str, os.PathLike)) or str(out_dir) == "" or Path(out_dir).exists() \
                and not Path(out_dir).is_dir():
            raise ValueError(f"out_dir must be a folder (or None: do not save), got {out_dir!r}")
    records, seconds = run_coverage(replace(sweep, n_values=(cfg.n_values,)), cfg, store, progress, command,
                                    **options)
    record, params = assemble_size(sweep, cfg, records, seconds)
    if out_dir is not None:
        header = {k: v for k, v in record.items() if k != "format"}
        checkpoints.save(Path(out_dir) / f"controlled_V{cfg.n_values}", params, header, format=FORMAT)
    record["params"] = params
    return record


def load_sweep(n_values: int, directory=None) -> dict:
    """A saved size: the JSON record with ``config`` as :class:`ControlledConfig` and ``params`` (stacked)."""
    n_values = checks.integer(n_values, "n_values", 2)     # also keeps the file name inside its folder
    name = f"controlled_V{n_values}"
    path = door.stored_path(Path(directory) / name if directory else f"binding/{name}", SWEEP_COMMAND)
    params, record = checkpoints.load(path, format=FORMAT)
    record["config"] = checks.from_fields(ControlledConfig, record.get("config"), f"{path}.json: config")
    record["params"] = params
    return record


def record_splits(record: dict) -> tuple[SweepConfig, list]:
    """The sweep config of a saved size (:func:`load_sweep`) and its splits, rebuilt as training built them."""
    cfg = record["config"]
    sweep = SweepConfig(**{**record["sweep"], "coverages": tuple(record["sweep"]["coverages"]),
                           "seeds": tuple(record["sweep"]["seeds"]), "n_values": (cfg.n_values,)})
    return sweep, sweep_splits(sweep, cfg.n_values, cfg.n_concepts)[0]


def validation_binding(record: dict, n_scenes: int = 128) -> np.ndarray:
    """Binding on train objects (M,): :func:`~compbook.binding.controlled.swap_recognition` of each saved model
    on ``n_scenes`` of its validation scenes (train objects, pairs not trained on; never the test split)."""
    cfg = record["config"]
    splits = record_splits(record)[1]
    out = []
    for m, s in enumerate(splits):
        one = {k: v[m:m + 1] for k, v in record["params"].items()}
        out.append(swap_recognition(one, cfg, subsample(np.asarray(s.val), n_scenes, s.seed)[None])[0])
    return np.array(out)


def rescore(n_values: int, directory=None) -> dict:
    """Recompute :func:`test_scores` of a saved size from its stored weights and rewrite its JSON (the
    weights are not touched); returns the record as :func:`load_sweep` gives it."""
    rec = load_sweep(n_values, directory)
    sweep, splits = record_splits(rec)
    rec.update(test_scores(rec["params"], rec["config"], splits, sweep))
    name = f"controlled_V{n_values}.json"
    path = door.made_path(Path(directory) / name if directory else f"binding/{name}")
    results.write_json(path, {k: asdict(v) if k == "config" else v for k, v in rec.items() if k != "params"},
                       results.joined(rec.get("made_by"), results.made_by(path)))
    return rec


def transition(coverages, accuracy, level: float = 0.5) -> float:
    """The coverage where a curve first reaches ``level`` (linear interpolation); NaN if it never does."""
    level = checks.real(level, "level", 0, 1, low_open=True)
    c, a = np.asarray(coverages, float), checks.tensor(accuracy, "accuracy").double().numpy()
    if c.shape != a.shape or c.ndim != 1:
        raise ValueError(f"coverages and accuracy must be paired 1-D arrays, got {c.shape} and {a.shape}")
    above = np.flatnonzero(a >= level)
    if not len(above):
        return float("nan")
    i = above[0]
    if i == 0:
        return float(c[0])
    return float(c[i - 1] + (level - a[i - 1]) * (c[i] - c[i - 1]) / (a[i] - a[i - 1]))


def spearman_bootstrap(x, y, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Spearman's rho of x and y (scipy) and a percentile bootstrap interval over resampled pairs (resamples
    in which x or y is constant are skipped; all NaN when x or y is constant)."""
    from scipy.stats import spearmanr

    n_boot = checks.integer(n_boot, "n_boot")
    level = checks.real(level, "level", 0.0, 1.0, low_open=True, high_open=True)
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(f"x, y: need two equal-length 1-D arrays of >= 3 values, got {x.shape} and {y.shape}")
    rho = float(spearmanr(x, y).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        i = rng.integers(0, len(x), len(x))
        if np.ptp(x[i]) > 0 and np.ptp(y[i]) > 0:
            boots.append(spearmanr(x[i], y[i]).statistic)
    if not boots:   # a constant x or y: rho is undefined (NaN), and so is its interval
        return rho, float("nan"), float("nan")
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return rho, float(lo), float(hi)


def recipe_check(cfg: ControlledConfig, coverages, seed: int = 0, max_scenes: int = 20000,
                 n_scenes: int = 256) -> dict:
    """Train one model per coverage with ``cfg`` (one stack) and read binding on seen and unseen objects:
    ``{"coverages", "bind_seen"`` (swap-only on train scenes), ``"bind_unseen"`` (:func:`test_binding`),
    ``"recognition"`` (:func:`test_recognition`), ``"final_loss"``, ``"seconds"}`` (lists, one per coverage).
    How ``data/binding/recipes.json`` was made (``--recipe-check``): can a recipe bind at all, and does it
    carry to unseen objects?"""
    cov = check_coverages(coverages)
    splits = [coverage_split(cfg.tokens.space.n_objects, c, seed=seed, max_scenes=max_scenes) for c in cov]
    res = train_controlled(cfg, splits, [seed] * len(cov), progress=False)
    seen = np.stack([subsample(np.asarray(s.train), n_scenes, seed) for s in splits])
    return {"coverages": list(cov), "seed": seed, "config": asdict(cfg),
            "bind_seen": swap_recognition(res.params, cfg, seen).tolist(),
            "bind_unseen": test_binding(res.params, cfg, splits, n_scenes).tolist(),
            "recognition": test_recognition(res.params, cfg, splits, n_scenes).tolist(),
            "final_loss": res.losses[-1].tolist(), "seconds": round(res.seconds, 1)}


# ---------------------------------------------------------------- what chapter 13 and its notes read

def load_sweeps(sweep: SweepConfig | None = None, directory=None, retrain: bool = False) -> dict:
    """Every object-space size of ``sweep`` (default :func:`default_sweep`), ``{V: record}`` as :func:`load_sweep`
    gives it (chapter 13 and Part B's notes), from ``directory`` (default the mode's store,
    :func:`~compbook.binding.recipe.model.store_dir`: ``data/binding/`` in CPU mode, ``data/binding/full/`` in full
    mode, so a stored CPU sweep is never read in full mode).

    A size is trained (:func:`run_size` at ``ControlledConfig.for_mode()`` with that V) and saved in
    ``directory`` when ``retrain``, and in full mode when it is missing or was stored for other settings; each size
    is saved as soon as it is trained, and each model of a size as soon as its stack is (the runner's store,
    :func:`compbook.binding.runs.tasks.default_store`; ``retrain``: a fresh one), so an interrupted run resumes with
    the models still missing. In CPU mode a
    missing size is a ``FileNotFoundError`` naming the command that trains it, and one stored for other settings a
    ``ValueError`` (a stored answer is never served for another question)."""
    sweep = default_sweep() if sweep is None else checks.instance(sweep, "sweep", SweepConfig)
    directory = Path(directory) if directory else store_dir()
    out = {}
    for v in sweep.n_values:
        want = replace(ControlledConfig.for_mode(), n_values=v)

        def make(want=want):
            from .tasks import default_store
            run_size(sweep, want, directory, store=None if retrain else default_store())

        door.stored_or_made(f"controlled_V{v}", _asked(sweep, want), make, store=directory,
                            recorded=_recorded, may_make=retrain or config.is_full(), stale="remake",
                            remake=retrain, command=SWEEP_COMMAND)
        out[v] = load_sweep(v, directory)
    return out


#: the command that trains the sweep's sizes
SWEEP_COMMAND = "python -m compbook.binding sweep"


def _asked(sweep: SweepConfig, want: ControlledConfig) -> dict:
    """The settings a stored size must record to answer for ``want`` and ``sweep`` (all but ``n_values``)."""
    asked = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(sweep).items() if k != "n_values"}
    return asked | {"config": asdict(want)}


def _recorded(path: Path) -> dict:
    """The settings the stored size at ``path`` records, the fields :func:`_asked` names."""
    header = results.json_file(checkpoints.files(path)[0], f"stored sweep {path.name}")
    stored = dict(header.get("sweep", {}), config=header.get("config"))
    return {k: stored.get(k) for k in [f.name for f in fields(SweepConfig)] + ["config"] if k != "n_values"}


def correlation_text(value) -> str:
    """A correlation as chapter 13 prints it: two decimals, or "undefined" where it is NaN (one of the two series
    is constant: e.g. no model recognises an unseen object, as in the full-mode smoke)."""
    value = float(value)
    return f"{value:.2f}" if np.isfinite(value) else "undefined"


def model_params(record: dict, m: int) -> dict:
    """Model ``m``'s weights from a stored stack (a stack of one, the shape every reader takes)."""
    n = len(record["coverages"])
    m = checks.integer(m, "m", 0, n - 1)
    return {k: t[m:m + 1] for k, t in record["params"].items()}


def scenes_read(record: dict) -> np.ndarray:
    """How many test scenes each model's unseen-object recognition was read on (M,): :func:`test_scenes` of
    its split, held-out objects that need binding, at most the sweep's ``test_scenes``."""
    sweep, splits = record_splits(record)
    space = record["config"].tokens.space
    return np.array([len(test_scenes(s, sweep.test_scenes, space)) for s in splits])


def coverage_intervals(record: dict, key: str = "test_recognition", seed: int = 0):
    """Chapter 13's curve: per coverage, the score ``key`` pooled over seeds (scenes weighted equally) with a
    95% interval that resamples the seeds' models, then the scenes of each (``compbook.stats.pooled_ci``).
    A DataFrame indexed by coverage: ``mean``, ``low``, ``high``, ``models``, ``scenes``."""
    import pandas as pd
    from ...stats import pooled_ci

    if key not in record:
        raise ValueError(f"key={key!r}: not in the record (has {sorted(k for k in record if k.startswith('test'))};"
                         f" python -m compbook.binding sweep --rescore adds the test scores)")
    cov = np.asarray(record["coverages"])
    p = np.clip(np.asarray(record[key], float), 0, 1)
    n = scenes_read(record)
    rows = []
    for c in np.unique(cov):
        i = cov == c
        lo, hi = pooled_ci(p[i], n[i], seed=seed)
        rows.append({"coverage": float(c), "mean": float((p[i] * n[i]).sum() / n[i].sum()), "low": lo,
                     "high": hi, "models": int(i.sum()), "scenes": int(n[i].sum())})
    return pd.DataFrame(rows).set_index("coverage")


def model_table(records: dict):
    """One row per stored model of every size (chapter 13): ``|O|``, ``coverage``, ``seed``, ``recognition``
    (unseen objects, scenes that need binding), ``binding`` (the swap test on the same scenes) and each probe's
    held-out R^2 (columns :data:`PROBE_KINDS`)."""
    import pandas as pd

    rows = []
    for rec in records.values():
        for m, (cov, seed) in enumerate(zip(rec["coverages"], rec["seeds"])):
            rows.append({"|O|": rec["n_objects"], "coverage": cov, "seed": seed,
                         "recognition": rec["test_recognition"][m], "binding": rec["test_binding"][m],
                         **{k: rec["probe_r2"][k][m] for k in PROBE_KINDS}})
    return pd.DataFrame(rows)


def probe_correlations(models, y: str = "recognition", by: str | None = None):
    """Spearman's rho of each probe's R^2 against ``y`` over the rows of ``models`` (:func:`model_table`), with
    its 95% bootstrap interval (:func:`spearman_bootstrap`); ``by`` a column: one row per group and probe."""
    import pandas as pd

    groups = [(None, models)] if by is None else list(models.groupby(by))
    rows = []
    for name, g in groups:
        for k in PROBE_KINDS:
            rho, lo, hi = spearman_bootstrap(g[k], g[y])
            rows.append(({} if by is None else {by: name}) | {"probe": k, "models": len(g), "spearman": rho,
                                                               "low 95%": lo, "high 95%": hi})
    return pd.DataFrame(rows).set_index(["probe"] if by is None else [by, "probe"])


def binding_table(records: dict, n_scenes: int = 128):
    """Binding against swaps per coverage and size (chapter 13): ``seen`` (validation scenes of train objects,
    computed here by :func:`validation_binding`), ``unseen`` (test scenes that need binding, stored) and
    ``chance`` (a random order of each test scene's candidates, :func:`~compbook.binding.controlled.swap_chance`),
    means over seeds; one row per (|O|, coverage)."""
    import pandas as pd
    from ..controlled import swap_chance

    rows = []
    for rec in records.values():
        sweep, splits = record_splits(rec)
        cfg, cov = rec["config"], np.asarray(rec["coverages"])
        seen = validation_binding(rec, n_scenes)
        unseen = np.asarray(rec["test_binding"])
        chance = np.array([swap_chance(cfg, test_scenes(s, sweep.test_scenes, cfg.tokens.space)) for s in splits])
        for c in np.unique(cov):
            i = cov == c
            rows.append({"|O|": rec["n_objects"], "coverage": float(c), "seen": seen[i].mean(),
                         "unseen": unseen[i].mean(), "chance": chance[i].mean()})
    return pd.DataFrame(rows).set_index(["|O|", "coverage"])


def binding_curves(records: dict, n_scenes: int = 128):
    """Chapter 13's one measure, the swap test, per (|O|, coverage): :func:`binding_table`'s ``seen`` and
    ``chance``, and on unseen objects the pooled mean with its 95% interval (:func:`coverage_intervals` of
    ``test_binding``: ``unseen``, ``low``, ``high``), so that figure, table and prose read the same numbers."""
    import pandas as pd

    table = binding_table(records, n_scenes)
    pooled = pd.concat({rec["n_objects"]: coverage_intervals(rec, "test_binding") for rec in records.values()},
                       names=["|O|", "coverage"])
    table["unseen"] = pooled["mean"]
    return table.join(pooled[["low", "high"]])[["seen", "unseen", "low", "high", "chance"]]


def slider_frames(record: dict, seed: int = 0, n_scenes: int = 6) -> dict:
    """Chapter 13's slider: ``{coverage: (logits (n_scenes, 2^C), m)}`` for the models of ``seed``, their
    cosine logits on ``n_scenes`` held-out scenes that need binding against each scene's objects and swaps
    (:func:`~compbook.binding.controlled.swap_logits`), ``m`` the model's row in the record."""
    from ..controlled import swap_logits

    sweep, splits = record_splits(record)
    cfg, out = record["config"], {}
    for m, (cov, s) in enumerate(zip(record["coverages"], record["seeds"])):
        if s == seed:
            scenes = test_scenes(splits[m], n_scenes, cfg.tokens.space)
            out[cov] = (swap_logits(model_params(record, m), cfg, scenes), m)
    return out


def recipe_check_table(stored: list[dict], n_scenes: int = 256, max_scenes: int = 20000):
    """The ``--recipe-check`` rows (``data/binding/recipes.json``'s ``rows``) as one table (Part B's notes):
    binding of seen and unseen objects per recipe, size and coverage, with a ``(chance)`` row per size, what a
    random order of the candidates scores on the same test scenes (seed 0)."""
    import pandas as pd
    from ..controlled import swap_chance

    rows = [{"recipe": r["name"], "|O|": r["n_objects"], "coverage": c, "bind seen": s, "bind unseen": u}
            for r in stored for c, s, u in zip(r["coverages"], r["bind_seen"], r["bind_unseen"])]
    for n in sorted({r["|O|"] for r in rows}):
        size = ControlledConfig(n_values=round(n ** (1 / 3)))
        for c in sorted({r["coverage"] for r in rows}):
            split = coverage_split(n, c, seed=0, max_scenes=max_scenes)
            rows.append({"recipe": "(chance)", "|O|": n, "coverage": c,
                         "bind unseen": swap_chance(size, test_scenes(split, n_scenes, size.tokens.space))})
    table = pd.DataFrame(rows).drop_duplicates(["recipe", "|O|", "coverage"], keep="last")
    return table.pivot_table(index=["|O|", "recipe"], columns="coverage", values=["bind seen", "bind unseen"])


def attention_share(records: dict, n_scenes: int = 300, seed: int = 0):
    """Does attention group a scene's tokens by object? One row per stored model (chapter 13): ``|O|``,
    ``coverage``, ``seed``, and over ``n_scenes`` random scenes the share of a value token's attention to the
    other value tokens that goes to its own object (:func:`~compbook.binding.controlled.own_object_attention`),
    averaged over heads (``mean``) and of the most object-minded head (``best head``); 0.5 is blind to objects."""
    import pandas as pd
    from ..controlled import own_object_attention, scene_attention

    rng = np.random.default_rng(seed)
    rows = []
    for rec in records.values():
        scenes = rng.integers(0, rec["n_objects"], (len(rec["coverages"]), n_scenes, 2))
        own = own_object_attention(scene_attention(rec["params"], rec["config"], scenes), rec["config"])
        for m, (cov, s) in enumerate(zip(rec["coverages"], rec["seeds"])):
            rows.append({"|O|": rec["n_objects"], "coverage": cov, "seed": s, "mean": own[m].mean(),
                         "best head": own[m].max()})
    return pd.DataFrame(rows)
