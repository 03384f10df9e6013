"""Training by the paper's released controlled-model recipe, scaled down (chapter 13).

The recipe's settings are :class:`~compbook.binding.recipe.config.RecipeConfig` (CPU miniature;
``COMPBOOK_MODE=full``: the released sizes), its data :mod:`~compbook.binding.recipe.data`, its model
:mod:`~compbook.binding.recipe.model`, its readings :mod:`~compbook.binding.recipe.evaluate`. Fact kept from the
released code (``train_clean.py``; read, not copied): AdamW (weight decay 0.1 on every parameter, tau included),
linear warm-up over 10% of the steps, then linear decay to 0, stepped every step; fresh scenes every step.

:func:`train_recipe` trains one model (resumable: the whole state is checkpointed at every evaluation, no
pickle); :func:`run_one` trains, evaluates and stores one (``python -m compbook.binding recipe``);
:func:`lr_probe` is our choice of learning rate on seen objects only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from ...results import checkpoints
from ... import checks
from ...config import device as run_device
from ...config import is_full
from ...config import mode as run_mode
from .config import RecipeConfig
from .data import batch_queries, sample_recipe_scenes, split_objects
from .evaluate import (
    StoredEvaluation, eval_sets, evaluate_recipe, evaluate_stored, floors, paper_metric, swap_binding
)
from .model import FORMAT, RecipeEncoder, batch_loss, save_recipe, stem_for
from ...results import door


def lr_factor(cfg: RecipeConfig, step: int) -> float:
    """Released schedule: linear warm-up over warmup_frac of the steps, then linear decay to 0."""
    step = checks.integer(step, "step", 0)
    warm = int(cfg.warmup_frac * cfg.steps)
    if step < warm:
        return step / max(1, warm)
    return max(0.0, (cfg.steps - step) / max(1, cfg.steps - warm))


#: the resumable training state's checkpoint format (:mod:`compbook.results.checkpoints`: safetensors + JSON, no pickle)
STATE_FORMAT = "compbook-recipe-state/1"


def _save_state(path, cfg, model, opt, step, rng, log, seconds) -> None:
    """The whole training state: weights, AdamW's moments and step counts, both random streams, the log."""
    opt_sd = opt.state_dict()
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors |= {f"opt.{i}.{k}": v for i, s in opt_sd["state"].items() for k, v in s.items()}
    tensors["torch_rng"] = torch.get_rng_state()
    header = {"config": asdict(cfg), "param_groups": opt_sd["param_groups"], "step": step,
              "rng": rng.bit_generator.state, "log": log, "seconds": seconds}
    checkpoints.save(path, tensors, header, format=STATE_FORMAT)


def _load_state(path, cfg, model, opt, rng, device) -> tuple[int, list, float]:
    """Restore what :func:`_save_state` wrote into ``model``, ``opt`` and ``rng``; ``(step, log, seconds)``.
    A state of another config is refused (``ValueError`` naming the checkpoint)."""
    header = checkpoints.read_header(path, format=STATE_FORMAT)
    if header.get("config") != asdict(cfg):
        raise ValueError(f"checkpoint {path} was made with another config; remove it or pass another")
    tensors, _ = checkpoints.load(path, format=STATE_FORMAT)
    model.load_state_dict({k[6:]: v.to(device) for k, v in tensors.items() if k.startswith("model.")})
    state: dict = {}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, i, name = k.split(".", 2)
            state.setdefault(int(i), {})[name] = v if name == "step" else v.to(device)
    opt.load_state_dict({"state": state, "param_groups": header["param_groups"]})
    rng.bit_generator.state = header["rng"]
    torch.set_rng_state(tensors["torch_rng"])
    return header["step"], header["log"], header["seconds"]


#: the eval sets :func:`train_recipe` reads (:func:`eval_sets` makes them)
SET_NAMES = frozenset({"seen_binding", "unseen_binding", "seen_batches", "unseen_batches"})


def train_recipe(cfg: RecipeConfig, checkpoint: str | os.PathLike | None = None, sets: dict | None = None,
          stop_after: int | None = None, progress: bool = True,
          device: str | torch.device | None = None) -> tuple[RecipeEncoder, dict]:
    """Train one model by the recipe; resumes from ``checkpoint`` when it exists and saves it at every
    evaluation. ``stop_after``: stop after that many steps in this call (tests of resume). Returns the model
    (final weights) and a record with the log (every ``eval_every`` steps and at the end) and seconds.
    ``device``: where the model runs (default :func:`compbook.config.device`, a GPU in full mode; the data are
    generated on the CPU either way)."""
    checks.instance(cfg, "cfg", RecipeConfig)
    stop_after = checks.optional_integer(stop_after, "stop_after")
    device = run_device() if device is None else checks.torch_device(device, "device")
    if checkpoint is not None and (not isinstance(checkpoint, (str, os.PathLike)) or str(checkpoint) == ""):
        raise ValueError(f"checkpoint must be a path (str or os.PathLike) or None, got {checkpoint!r}")
    if sets is not None:
        missing = sorted(SET_NAMES - set(checks.mapping(sets, "sets")))
        if missing:
            raise ValueError(f"sets must be eval_sets(cfg)'s dict, missing {missing}")
    with torch.device("meta"):
        n_weights = sum(p.numel() for p in RecipeEncoder(cfg).parameters())
    n_tokens = cfg.max_objects * (cfg.n_concepts + 2) + 1
    # the weights, their init, gradients and AdamW's moments (5 copies); one step's activations: the batch's
    # scenes and the query set, each token (8 d_model + 2 d_ff) per layer with its attention probabilities
    # (n_heads x length), twice (forward and backward)
    n_query = cfg.n_concepts + 2
    acts = ((cfg.batch * n_tokens * (8 * cfg.d_model + 2 * cfg.d_ff + cfg.n_heads * n_tokens)
             + (cfg.n_object_queries + cfg.n_concept_queries) * n_query * (8 * cfg.d_model + 2 * cfg.d_ff
                                                                           + cfg.n_heads * n_query)) * cfg.n_layers)
    checks.check_budget(4.0 * (5 * n_weights + 2 * acts), f"training a recipe model of d_model={cfg.d_model}, "
                                                          f"batch={cfg.batch}", device=device)
    torch.manual_seed(cfg.seed)
    model = RecipeEncoder(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    train_ids, _ = split_objects(cfg)
    step, log, seconds = 0, [], 0.0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and checkpoints.files(path)[0].exists():
        step, log, seconds = _load_state(path, cfg, model, opt, rng, device)
    end = cfg.steps if stop_after is None else min(cfg.steps, step + stop_after)
    t0 = time.perf_counter()
    while step < end:
        for g in opt.param_groups:
            g["lr"] = cfg.lr * lr_factor(cfg, step)
        model.train()
        scenes = sample_recipe_scenes(cfg, train_ids, cfg.batch, rng)
        q = batch_queries(cfg, scenes, rng)     # released training: swaps may be any object
        loss = batch_loss(model, cfg, scenes, q)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % cfg.eval_every == 0 or step == cfg.steps:
            seconds += time.perf_counter() - t0
            entry = {"step": step, "loss": float(loss.detach()), "scale": float(model.scale().detach()),
                     "lr": cfg.lr * lr_factor(cfg, step - 1), "seconds": round(seconds, 1)}
            if sets is not None:
                entry.update(evaluate_recipe(model, cfg, sets))
            log.append(entry)
            if progress:
                print(json.dumps(entry), flush=True)
            if path is not None:
                _save_state(path, cfg, model, opt, step, rng, log, seconds)
            t0 = time.perf_counter()
    seconds += time.perf_counter() - t0
    return model, {"config": asdict(cfg), "log": log, "seconds": round(seconds, 1), "steps": step}


def lr_probe(cfg: RecipeConfig, lrs, steps: int) -> list[dict]:
    """Our choice of learning rate: short runs (``steps``, the same schedule shape) per lr, scored on
    *seen* objects only (swap-only binding and the paper's metric on fresh scenes of training objects);
    the unseen split is not evaluated here."""
    out = []
    for lr in lrs:
        c = replace(cfg, lr=float(lr), steps=int(steps), eval_every=int(steps))
        sets = eval_sets(c)
        model, rec = train_recipe(c, progress=False)
        out.append({"lr": float(lr), "steps": int(steps), "seconds": rec["seconds"],
                    "loss": rec["log"][-1]["loss"],
                    "seen_binding": float(swap_binding(model, c, sets["seen_binding"]).mean()),
                    "seen_paper": float(paper_metric(model, c, sets["seen_batches"]).mean())})
        print(json.dumps(out[-1]), flush=True)
    return out


def default_checkpoint(cfg: RecipeConfig, name: str) -> Path:
    """Where :func:`run_one` keeps a resumable training state by default: the temporary folder, named by the model
    and a digest of its whole config (a CPU run's state and a full run's never share a file)."""
    digest = hashlib.sha256(json.dumps(asdict(cfg), sort_keys=True).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / "compbook-checkpoints" / f"{name}_{digest}_state"


def train_and_evaluate(cfg: RecipeConfig, checkpoint=None, device=None) -> tuple[RecipeEncoder, dict]:
    """Train one model (:func:`train_recipe`, resuming from ``checkpoint``, on ``device``), then read it on its
    :func:`eval_sets` (``final``) and simulate its ``floors``: the model and its record (what :func:`run_one` and
    the runner's task :func:`compbook.binding.runs.tasks.train_recipe_task` store)."""
    sets = eval_sets(cfg)
    model, record = train_recipe(cfg, checkpoint, sets, device=device)
    record["final"] = evaluate_recipe(model, cfg, sets)
    record["floors"] = floors(cfg, sets)
    return model, record


def run_one(cfg: RecipeConfig, out=None, checkpoint=None, command: str = "", prefix: str = "recipe") -> dict:
    """Train (resuming from ``checkpoint``, default :func:`default_checkpoint`), evaluate, store under ``out``
    (default :func:`~compbook.binding.recipe.model.store_dir`); the record."""
    stem = stem_for(cfg, out, prefix)
    door.note_made(stem, "trained by run_one")
    ckpt = checkpoint or default_checkpoint(cfg, stem.name)
    model, record = train_and_evaluate(cfg, ckpt, run_device())
    if command:
        record["made_by"] = command
    record["mode"] = run_mode()
    record["threads"] = torch.get_num_threads()
    save_recipe(model.cpu(), record, stem)
    print(json.dumps({"final": record["final"], "floors": record["floors"], "seconds": record["seconds"]}))
    return record


def stored_or_trained(cfg: RecipeConfig, prefix: str = "recipe", floors_here: bool = False) -> StoredEvaluation:
    """The model of ``cfg`` in the mode's store (:func:`~compbook.binding.recipe.model.stem_for`), evaluated here
    (:func:`~compbook.binding.recipe.evaluate.evaluate_stored`): Part B's notes read their models so, through
    :func:`compbook.results.door.stored_or_made` (fetched outside a checkout). In full mode a model not stored yet is
    trained first (:func:`run_one`, resumable from its checkpoint) and stored; in CPU mode the models are
    committed, and a missing one is a ``FileNotFoundError`` naming the command that trains it. A model stored
    for another config is a ``ValueError``."""
    checks.instance(cfg, "cfg", RecipeConfig)
    stem = stem_for(cfg, prefix=prefix)
    command = (f"python -m compbook.binding recipe --values {cfg.n_values} --coverages {cfg.coverage} "
               f"--steps {cfg.steps} --lr {cfg.lr:g} --prefix {prefix}")

    def make():
        print(f"{stem.name}: training it here ({cfg.steps:,} steps; resumable)")
        run_one(cfg, prefix=prefix, command=f"COMPBOOK_MODE=full {command}")

    door.stored_or_made(stem, asdict(cfg), make, recorded=_recorded_config, may_make=is_full(),
                        stale="refuse", command=command)
    return evaluate_stored(stem, cfg, floors_here=floors_here)


def _recorded_config(stem) -> dict | None:
    """The config a stored recipe model records (its JSON's ``config``)."""
    return checkpoints.read_header(stem, format=FORMAT).get("config")
