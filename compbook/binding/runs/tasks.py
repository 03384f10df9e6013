"""Part B's sweeps on the runner :mod:`compbook.runs.sweeps`: the coverage sweep and the recipe models (chapter 13).

* :func:`coverage_sweep`: one config per controlled model (object-space size, coverage, seed) of
  :func:`compbook.binding.runs.sweep.run_size`; a task trains a stack of same-size models at once
  (:func:`train_stack`, :func:`compbook.binding.controlled.train_controlled`). Each model draws its batches from
  its own seed, so its record does not depend on which models shared its stack (on a CPU at one torch thread,
  bit for bit; with more threads or on a GPU, up to float rounding, ~1e-7 in the weights).
  :func:`assemble_size` turns the records of one size back into the record and stacked checkpoint that
  ``run_size`` always stored (``data/binding/controlled_V{V}``), which chapters 12-13 and the notes read.
* :func:`recipe_sweep`: one config per recipe model (:mod:`compbook.binding.recipe.train`); :func:`store_recipe`
  writes a record where :func:`~compbook.binding.recipe.train.run_one` writes its model.
* :func:`tiny_sweep`: the coverage sweep at a size that runs in seconds on one CPU (the runner's tests).

A config holds everything that changes its result: the model's :class:`ControlledConfig` (or
:class:`~compbook.binding.recipe.config.RecipeConfig`) whole, the coverage and seed, the split and scoring sizes,
and the mode (full mode trains on a GPU where the worker has one).
"""

from __future__ import annotations

import json
import tempfile
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path

import torch

from ... import checks, config as run_config
from ...runs import sweeps
from ..controlled import ControlledConfig, check_training_size, train_controlled, training_bytes
from ..probes import PROBE_KINDS
from .scoring import FORMAT, SweepConfig, probe_fits, sweep_splits, test_scores
from ..splits import split_bytes

COVERAGE = "binding/coverage"
RECIPE = "binding/recipe"
#: the most models one coverage sweep may hold (our choice; the paper trained some 500)
MAX_MODELS = 10_000
#: what a model's config holds besides its ``model``: the sweep's per-model settings
SPLIT_KEYS = ("coverage", "seed", "max_scenes", "test_scenes", "probe_scenes", "mode")


def default_store(name: str = COVERAGE) -> Path:
    """Where a sweep's records are kept between runs (resumable): :func:`compbook.runs.sweeps.store_for` (Part B's store
    ``binding``: ``data/binding/full/sweeps/`` in full mode, a temporary cache in CPU mode)."""
    return sweeps.store_for(name, "binding")


# ---------------------------------------------------------------- the coverage sweep (chapter 13)

def coverage_configs(sweep: SweepConfig, cfg: ControlledConfig) -> list[dict]:
    """One config per model: sizes of ``sweep.n_values`` (``cfg`` with that ``n_values``), then coverages, then
    seeds (the order of a stored size: coverage-major, seed-minor)."""
    checks.instance(sweep, "sweep", SweepConfig)
    checks.instance(cfg, "cfg", ControlledConfig)
    n = len(sweep.n_values) * len(sweep.coverages) * len(sweep.seeds)
    if n > MAX_MODELS:
        raise ValueError(f"sweep: sizes x coverages x seeds = {n:,} models, more than MAX_MODELS = {MAX_MODELS:,}")
    for v in sweep.n_values:
        check_training_size(replace(cfg, n_values=v), 1)
    checks.check_budget(max(split_bytes(v ** cfg.n_concepts, 2, sweep.max_scenes) for v in sweep.n_values),
                        "one split's scenes (max_scenes)")
    mode = run_config.mode()
    return [{"model": asdict(replace(cfg, n_values=v)), "coverage": float(c), "seed": int(s),
             "max_scenes": sweep.max_scenes, "test_scenes": sweep.test_scenes, "probe_scenes": sweep.probe_scenes,
             "mode": mode}
            for v in sweep.n_values for c in sweep.coverages for s in sweep.seeds]


def coverage_sweep(sweep: SweepConfig, cfg: ControlledConfig, command: str | None = None) -> sweeps.Sweep:
    """The coverage sweep as a :class:`compbook.runs.sweeps.Sweep` (:func:`coverage_configs`), stacked by size."""
    return sweeps.Sweep(COVERAGE, coverage_configs(sweep, cfg), run=train_one, run_many=train_stack,
                        group=size_group, model_bytes=model_bytes, command=command)


def parse_config(config: dict) -> tuple[ControlledConfig, SweepConfig]:
    """A model's config as ``(ControlledConfig, SweepConfig of that one model)``; ``ValueError`` naming a missing
    or unknown field."""
    checks.mapping(config, "config")
    missing, unknown = sorted({"model", *SPLIT_KEYS} - set(config)), sorted(set(config) - {"model", *SPLIT_KEYS})
    if missing or unknown:
        raise ValueError(f"config: missing fields {missing}, unknown fields {unknown} (coverage_configs makes them)")
    cfg = checks.from_fields(ControlledConfig, config["model"], "config['model']")
    one = SweepConfig(coverages=(config["coverage"],), seeds=(checks.integer(config["seed"], "config['seed']", 0),),
                      n_values=(cfg.n_values,), max_scenes=config["max_scenes"], test_scenes=config["test_scenes"],
                      probe_scenes=config["probe_scenes"])
    run_config.device(config["mode"])
    return cfg, one


def size_group(config: dict) -> str:
    """Which configs may train in one stack: equal in everything but coverage and seed (canonical JSON)."""
    return json.dumps({k: v for k, v in config.items() if k not in ("coverage", "seed")}, sort_keys=True)


def model_bytes(config: dict) -> int:
    """Memory of one model while it trains (:func:`~compbook.binding.controlled.training_bytes`: weights,
    gradients, AdamW's moments, one step's activations at its batch size)."""
    return int(training_bytes(parse_config(config)[0], 1))


def train_one(config: dict) -> dict:
    """One model's record (:func:`train_stack` of one config)."""
    return train_stack([config])[0]


def train_stack(configs: list) -> list[dict]:
    """Train same-size models at once (:func:`~compbook.binding.controlled.train_controlled`), then score each
    alone (its test scores and probe fits, as :func:`~compbook.binding.runs.sweep.run_size` stores them); one record
    per config, in order: ``params`` {name: tensor of the model's own shape}, ``coverage``, ``seed``,
    ``n_objects``, the test scores (floats), ``probe_r2`` {kind: float}, ``val_history`` (one per evaluation),
    ``best_step``, ``final_loss``, ``lr_first_last``. No wall time, nor which models shared the stack: a
    config's record is the same from any stack and on every backend."""
    configs = checks.sequence(configs, "configs")
    groups = {size_group(c) for c in configs}
    if len(groups) > 1:
        raise ValueError(f"configs: a stack needs one size and one training setup, got {len(groups)} (size_group)")
    parsed = [parse_config(c) for c in configs]
    cfg = parsed[0][0]
    splits = [sweep_splits(one, cfg.n_values, cfg.n_concepts)[0][0] for _, one in parsed]
    seeds = [one.seeds[0] for _, one in parsed]
    res = train_controlled(cfg, splits, seeds, progress=False, device=run_config.device(configs[0]["mode"]))
    out = []
    for m, ((_, one), split) in enumerate(zip(parsed, splits)):
        params = {k: v[m:m + 1] for k, v in res.params.items()}
        scores = test_scores(params, cfg, [split], one)
        fits = probe_fits(params, cfg, [split], one)
        out.append({"params": {k: v[0].clone() for k, v in params.items()}, "coverage": one.coverages[0],
                    "seed": one.seeds[0], "n_objects": cfg.tokens.space.n_objects}
                   | {k: v[0] if isinstance(v, list) else v for k, v in scores.items()}
                   | {"probe_r2": {k: float(fits[k][0]) for k in PROBE_KINDS}, "val_history": res.val[:, m].tolist(),
                      "best_step": int(res.best_step[m]), "final_loss": float(res.losses[-1, m]),
                      "lr_first_last": [float(res.lrs[0]), float(res.lrs[-1]), float(res.lrs.max())]})
    return out


def assemble_size(sweep: SweepConfig, cfg: ControlledConfig, records: list[dict],
                  seconds: float) -> tuple[dict, dict]:
    """``(record, params)`` of one size as :func:`~compbook.binding.runs.sweep.run_size` stores them, from its models'
    records in config order (coverage-major, seed-minor): per-model values become lists, ``val_history``
    (evaluations, models), the weights a stack (models, ...); ``train_seconds`` is ``seconds``."""
    checks.instance(sweep, "sweep", SweepConfig)
    records = checks.sequence(records, "records")
    want = [(float(c), s) for c in sweep.coverages for s in sweep.seeds]
    got = [(r.get("coverage"), r.get("seed")) for r in records]
    if got != want:
        raise ValueError(f"records: (coverage, seed) {got} are not the sweep's models {want} in order")
    keys = ("test_recognition", "test_recognition_all", "test_binding")
    record = {"format": FORMAT, "config": asdict(cfg), "sweep": asdict(sweep), "n_objects": cfg.tokens.space.n_objects,
              "coverages": [c for c, _ in want], "seeds": [s for _, s in want]}
    record |= {k: [r[k] for r in records] for k in keys} | {"test_scenes_rule": records[0]["test_scenes_rule"]}
    record |= {"probe_r2": {k: [r["probe_r2"][k] for r in records] for k in PROBE_KINDS},
               "val_history": [list(row) for row in zip(*(r["val_history"] for r in records))],
               "best_step": [r["best_step"] for r in records], "final_loss": [r["final_loss"] for r in records],
               "lr_first_last": records[0]["lr_first_last"],
               "train_seconds": checks.real(seconds, "seconds", 0)}
    params = {k: torch.stack([r["params"][k] for r in records]) for k in records[0]["params"]}
    return record, params


def run_coverage(sweep: SweepConfig, cfg: ControlledConfig, store=None, progress: bool = True,
                 command: str | None = None, **options) -> tuple[list[dict], float]:
    """Run :func:`coverage_sweep` on the runner (``options``: :func:`compbook.runs.sweeps.run`'s ``backend``,
    ``address``, ``workers``, ``retries``, ``per_task``): its records in config order and the runner's seconds
    (training and scoring the models it ran; models found stored take none). ``store``: the records' folder
    (configs stored there are not trained again); None: a temporary one, removed after."""
    sw = coverage_sweep(sweep, cfg, command)
    with tempfile.TemporaryDirectory(prefix="compbook-coverage-") if store is None else nullcontext(store) as where:
        report = sweeps.run(sw, Path(where), progress=progress, **options).check()
        return [rec for _, rec in report.by_config], report.seconds


# ---------------------------------------------------------------- the recipe models (chapter 13's go / no-go)

def recipe_sweep(variants, prefix: str = "recipe", command: str | None = None,
                 checkpoint_dir=None) -> sweeps.Sweep:
    """One config per recipe model: ``variants`` a list of :class:`~compbook.binding.recipe.config.RecipeConfig`;
    the config holds the whole RecipeConfig, the mode and the file ``prefix``, which names the model's resumable
    training state: :func:`~compbook.binding.recipe.train.default_checkpoint` (as
    :func:`~compbook.binding.recipe.train.run_one`), or ``<checkpoint_dir>/<model>_state`` when ``checkpoint_dir`` is
    given (then a field of the config too)."""
    from ..recipe.config import RecipeConfig
    from ..recipe.model import stem_for
    variants = checks.sequence(variants, "variants")
    for i, v in enumerate(variants):
        checks.instance(v, f"variants[{i}]", RecipeConfig)
    stem_for(variants[0], ".", prefix)          # a prefix that names a file, or ValueError
    extra = {}
    if checkpoint_dir is not None:
        extra["checkpoint_dir"] = checks.non_empty_str(str(checkpoint_dir), "checkpoint_dir")
    mode = run_config.mode()
    return sweeps.Sweep(RECIPE, [{"recipe": asdict(v), "mode": mode, "prefix": prefix} | extra for v in variants],
                        run=train_recipe_task, command=command)


def train_recipe_task(config: dict) -> dict:
    """One recipe model trained (resuming from its training state, :func:`recipe_sweep`), evaluated and its floors
    simulated (:func:`~compbook.binding.recipe.train.train_and_evaluate`): the record ``run_one`` stores (``config``,
    ``log``, ``seconds``, ``steps``, ``final``, ``floors``, ``mode``, ``threads``) and ``state``, the final
    weights."""
    from ..recipe.train import default_checkpoint, train_and_evaluate
    from ..recipe.config import RecipeConfig
    from ..recipe.model import stem_for
    checks.mapping(config, "config")
    fields = {"recipe", "mode", "prefix"}
    if not fields <= set(config) <= fields | {"checkpoint_dir"}:
        raise ValueError(f"config: fields {sorted(config)}, expected {sorted(fields)} and optionally "
                         f"'checkpoint_dir' (recipe_sweep makes them)")
    cfg = checks.from_fields(RecipeConfig, config["recipe"], "config['recipe']")
    device = run_config.device(config["mode"])
    name = stem_for(cfg, ".", config["prefix"]).name
    ckpt = (default_checkpoint(cfg, name) if config.get("checkpoint_dir") is None
            else Path(config["checkpoint_dir"]) / f"{name}_state")
    model, record = train_and_evaluate(cfg, ckpt, device)
    record |= {"mode": config["mode"], "threads": torch.get_num_threads()}
    return record | {"state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}


def store_recipe(record: dict, out=None, prefix: str = "recipe", command: str = "") -> Path:
    """Write a :func:`train_recipe_task` record where :func:`~compbook.binding.recipe.train.run_one` stores its model
    (:func:`~compbook.binding.recipe.model.stem_for` under ``out``, default the mode's store); the stem."""
    from ..recipe.model import RecipeEncoder, config_of, save_recipe, stem_for
    checks.mapping(record, "record")
    cfg = config_of(record, "record")
    model = RecipeEncoder(cfg)
    model.load_state_dict(record["state"])
    meta = {k: v for k, v in record.items() if k not in ("state", "mode", "threads")}
    meta |= ({"made_by": command} if command else {}) | {"mode": record["mode"], "threads": record["threads"]}
    stem = stem_for(cfg, out, prefix)
    save_recipe(model, meta, stem)
    return stem


# ---------------------------------------------------------------- the runner's tests

#: a controlled model small enough to train in well under a second
TINY_MODEL = ControlledConfig(n_concepts=3, n_values=3, d_model=8, n_layers=1, n_heads=2, d_out=8, steps=6, batch=4,
                              warmup=2, eval_every=3, eval_scenes=8, n_swaps=2)
#: two coverages x two seeds of |O| = 27
TINY_SWEEP = SweepConfig(coverages=(0.4, 0.7), seeds=(0, 1), n_values=(3,), max_scenes=200, test_scenes=30,
                         probe_scenes=20)


def tiny_sweep() -> sweeps.Sweep:
    """:func:`coverage_sweep` of :data:`TINY_SWEEP` x :data:`TINY_MODEL`: 4 models of one size, stacked by
    ``run_many``; a few seconds on one CPU."""
    return coverage_sweep(TINY_SWEEP, TINY_MODEL)
