"""Part A's training sweeps on the runner (:mod:`compbook.runs.sweeps`): chapters 6-9's networks, one record each.

Each builder returns a :class:`compbook.runs.sweeps.Sweep` whose configs are JSON and hold everything that changes a
result (target, resolution, sizes, steps, rates, seeds), so a stored record never answers another question:

* :func:`pruning_sweep` (chapter 6): one config per seed, :func:`compbook.cppn.runs.experiments.pruning_methods` as the
  chapter runs it; :func:`pruning_run` turns its record back into the
  :class:`~compbook.cppn.runs.experiments.PruningRun`.
* :func:`depth_sweep` (chapter 7) and :func:`unknown_sweep` (chapter 9): one config per (target, depth, seed), a
  dense network then similarity-pruned (:func:`compbook.cppn.depth.train_depth`); the seeds of one target and
  depth train as one stack (``run_many``: :func:`compbook.cppn.train.fit_many`); :func:`dense_sp_models`.
* :func:`optimizer_masks_sweep` and :func:`optimizer_sweep` (chapter 8), :func:`fer_optimizer_sweep` (chapter 8 on
  FER's architecture): one config per (optimizer, rate, seed), the seeds of one rate stacked;
  :func:`optimizer_run` gives the :class:`~compbook.cppn.runs.experiments.OptimizerRun`.

Stacks: a task trains its group's configs as one stack, the chapter's own stack when the task holds all its
seeds (the default: up to 16 a task), and then gives the chapter's networks bit for bit. A resumed sweep's
partial stack, or one config alone (``run``), may take another matmul blocking: the same networks to float
rounding (tests: 1e-5 after a few steps). :func:`tiny_sweep` is chapter 7's sweep at toy size (seconds on one
CPU), for tests of the runner's backends.

:func:`run_chapter6` ... :func:`run_chapter9`, :func:`run_chapter8_fer`: the stored re-read's chapters
(``python -m compbook.cppn experiments``, :func:`stored_runners`) with their networks trained by these sweeps.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import torch

from ... import checks
from ...runs import sweeps
from ...runs.sweeps import Sweep
from .. import depth, prune, train
from . import experiments
from ..network import CPPN, uniform_cppn

#: where each sweep's records live under the store root (:func:`store_for`)
NAMES = {"pruning": "cppn/pruning", "depth": "cppn/depth", "unknown": "cppn/unknown",
         "optimizer-masks": "cppn/optimizer-masks", "optimizer": "cppn/optimizer",
         "fer-optimizer": "cppn/fer-optimizer"}
#: target sources: Picbreeder genomes rendered, chapter 9's images, a drawn pattern (no data files: toy sweeps)
SOURCES = {"picbreeder": ("skull", "butterfly", "apple"),
           "unknown": ("astronaut", "coffee", "chelsea (cat)", "butterfly + apple", "butterfly", "apple"),
           "pattern": ("rings",)}
COMMAND = "python -m compbook.cppn experiments"


# -- stores and targets --------------------------------------------------------------------------------------------
def store_for(name: str, root=None) -> Path:
    """The folder of sweep ``name``'s records: ``root / <name's last part>``, or by default
    :func:`compbook.runs.sweeps.store_for` (full mode: ``data/emc2/full/sweeps/``, registered; CPU mode: a temporary
    cache the stored run resumes from; its product is ``data/emc2/partA_reread.json``)."""
    checks.non_empty_str(name, "name")
    if root is None:
        return sweeps.store_for(name, "emc2")
    return Path(root) / checks.safe_name(name.rpartition("/")[2], "name")


def target_spec(source: str, name: str) -> dict:
    """A config's target: ``{"source", "name"}`` checked against :data:`SOURCES`."""
    checks.choice(source, "source", SOURCES)
    return {"source": source, "name": checks.choice(name, f"target ({source})", SOURCES[source])}


def target_image(source: str, name: str, res: int) -> np.ndarray:
    """The ``(res, res, 3)`` target in [0, 1] a config names: a Picbreeder genome rendered at ``res``, chapter 9's
    image (:func:`compbook.cppn.runs.experiments.unknown_targets`) resized, or the ``"rings"`` pattern."""
    target_spec(source, name)
    return _target(source, name, checks.integer(res, "res")).copy()


@functools.lru_cache(maxsize=16)
def _target(source: str, name: str, res: int) -> np.ndarray:
    if source == "picbreeder":
        from .. import picbreeder
        return picbreeder.render(picbreeder.load_genome(name), res)
    if source == "unknown":
        from ...book.images import to_square
        return to_square(_unknown()[name], res)
    y, x = np.mgrid[-1:1:res * 1j, -1:1:res * 1j]
    r = np.hypot(x, y)
    return np.stack([0.5 + 0.5 * np.sin(6 * r), 0.5 + 0.5 * np.cos(3 * x), 0.5 + 0.5 * np.sin(2 * (x + y))], -1)


@functools.lru_cache(maxsize=1)
def _unknown() -> dict:
    return experiments.unknown_targets()[0]


# -- networks in records ------------------------------------------------------------------------------------------
def pack(model: CPPN, masks: bool = True) -> dict:
    """A network's tensors for a record: ``w<l>`` (and ``m<l>`` with ``masks``) per layer, ``(out, in)`` each."""
    out = {f"w{l}": w.detach().clone() for l, w in enumerate(model.weights)}
    return out | ({f"m{l}": m.clone() for l, m in enumerate(model.masks)} if masks else {})


def unpack(tensors: dict, template: CPPN) -> CPPN:
    """The network :func:`pack` stored, of ``template``'s architecture (its masks where none were stored)."""
    n = len(template.shapes)
    masks = [tensors[f"m{l}"] for l in range(n)] if "m0" in tensors else None
    return template.clone_with([tensors[f"w{l}"] for l in range(n)], masks)


def mask_bits(masks) -> list[str]:
    """0/1 masks as JSON: one string of ``"0"``/``"1"`` per layer, row-major (a config's masks)."""
    return ["".join("1" if v else "0" for v in (torch.as_tensor(m) != 0).flatten().tolist()) for m in masks]


def bits_masks(bits, shapes) -> list[torch.Tensor]:
    """The masks :func:`mask_bits` wrote, one float 0/1 ``(out, in)`` tensor per layer of ``shapes``."""
    if len(bits) != len(shapes) or any(len(b) != o * i for b, (o, i) in zip(bits, shapes)):
        raise ValueError(f"masks: {len(bits)} layers of bits do not fit the layer shapes {shapes}")
    return [torch.tensor([c == "1" for c in b], dtype=torch.float32).reshape(s) for b, s in zip(bits, shapes)]


def pairs(layout) -> list | str:
    """An activation layout as JSON that keeps its order: counts as ``[[name, count], ...]`` (a dict's canonical
    JSON sorts its keys, and the order is the neurons' order), a single name as itself."""
    return layout if isinstance(layout, str) else [[k, int(v)] for k, v in dict(layout).items()]


def layout_of(value) -> str | dict:
    """The layout :func:`pairs` wrote."""
    return value if isinstance(value, str) else {k: v for k, v in value}


def train_bytes(widths, res: int, n_out: int = 3) -> int:
    """Memory of one CPPN while it trains on a ``res x res`` target (our estimate): float32 activations and their
    gradients per pixel (4 inputs, z and h of every neuron, outputs), and 4 copies of the weights (Adam)."""
    widths = list(widths)
    weights = sum(o * i for o, i in zip(widths + [n_out], [4] + widths))
    return 4 * (res * res * (4 + 4 * sum(widths) + 4 * n_out) + 4 * weights)


def _seeds(seeds) -> list[int]:
    seeds = [checks.seed(s, f"seeds[{i}]") for i, s in enumerate(checks.sequence(seeds, "seeds"))]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: duplicates in {seeds}")
    return seeds


def _without(config: dict, *keys) -> dict:
    return {k: v for k, v in config.items() if k not in keys}


# -- chapters 7 and 9: dense networks, then SP ---------------------------------------------------------------------
def _dense_sp_configs(source: str, targets, depths, seeds, res: int, width: int, steps: int, lr: float,
                      sp: dict | None) -> list[dict]:
    """One config per (target, depth, seed); model ``b`` of a stack prunes with the stream ``seeds[0] + b``
    (:func:`compbook.cppn.depth.depth_sweep`'s rule), which its config holds (``sp_seed``)."""
    seeds = _seeds(seeds)
    depths = [checks.integer(d, "depths: each depth") for d in checks.sequence(depths, "depths")]
    specs = [target_spec(source, n) for n in checks.sequence(targets, "targets")]
    res, width = checks.integer(res, "res"), checks.integer(width, "width")
    if sp is not None and not isinstance(sp, dict):
        raise ValueError(f"sp must be a dict of similarity_prune's settings or None, got {sp!r}")
    layout = pairs(depth.mixed_layout(width))
    return [dict(target=t, res=res, depth=d, width=width, layout=layout, color="hsv", optimizer="adam",
                 steps=checks.integer(steps, "steps", 0), lr=checks.real(lr, "lr", 0, low_open=True),
                 sp=None if sp is None else dict(sp), seed=s, sp_seed=seeds[0] + b)
            for t in specs for d in depths for b, s in enumerate(seeds)]


def train_dense_sp_many(configs: list) -> list[dict]:
    """Train the configs of one group (:func:`dense_sp_group`) as one stack, then similarity-prune them. Record:
    ``dense`` and ``pruned`` networks (:func:`pack`), their MSEs on the target, ``n_weights``, ``sparsity``
    (no wall time: the same stack gives the same record on every backend)."""
    c = configs[0]
    if any(dense_sp_group(x) != dense_sp_group(c) for x in configs):
        raise ValueError("configs: a stack must share everything but seed and sp_seed")
    target = target_image(c["target"]["source"], c["target"]["name"], c["res"])
    dense, pruned = depth.train_depth(target, c["depth"], c["width"], [x["seed"] for x in configs],
                                      layout_of(c["layout"]), c["color"], c["steps"], c["lr"], c["optimizer"],
                                      c["sp"], sp_seeds=[x["sp_seed"] for x in configs])
    return [{"dense": pack(d, masks=False), "pruned": pack(p), "dense_mse": train.mse(d, target),
             "mse": train.mse(p, target), "n_weights": p.n_weights(), "sparsity": prune.sparsity(p.masks)}
            for d, p in zip(dense, pruned)]


def train_dense_sp(config: dict) -> dict:
    """One config of :func:`train_dense_sp_many` (a stack of one)."""
    return train_dense_sp_many([config])[0]


def dense_sp_group(config: dict) -> dict:
    """What a stack's configs share: everything but ``seed`` and ``sp_seed``."""
    return _without(config, "seed", "sp_seed")


def dense_sp_bytes(config: dict) -> int:
    """One network's training memory (:func:`train_bytes`)."""
    return train_bytes([config["width"]] * config["depth"], config["res"])


def _dense_sp_sweep(name: str, configs: list, command: str) -> Sweep:
    return Sweep(NAMES[name], configs, run=train_dense_sp, run_many=train_dense_sp_many, group=dense_sp_group,
                 model_bytes=dense_sp_bytes, command=command)


def dense_sp_models(config: dict, record: dict) -> tuple[CPPN, CPPN]:
    """``(dense, pruned)`` networks of a :func:`depth_sweep` or :func:`unknown_sweep` record."""
    template = uniform_cppn(config["depth"], config["width"], layout_of(config["layout"]), config["color"])
    return unpack(record["dense"], template), unpack(record["pruned"], template)


def depth_sweep(cfg: experiments.DepthConfig, seeds, depths=None, targets=None, source: str = "picbreeder") -> Sweep:
    """Chapter 7's training (:func:`compbook.cppn.depth.depth_sweep` with ``cfg``'s width, steps, lr and SP):
    every target of ``targets`` (default ``cfg.targets``) at every depth of ``depths`` (default ``cfg.depths``),
    one config per seed."""
    checks.instance(cfg, "cfg", experiments.DepthConfig)
    configs = _dense_sp_configs(source, cfg.targets if targets is None else targets,
                                cfg.depths if depths is None else depths, seeds, cfg.res, cfg.width, cfg.steps,
                                cfg.lr, cfg.sp)
    return _dense_sp_sweep("depth", configs, f"{COMMAND} --chapters 7")


def unknown_sweep(cfg: experiments.UnknownConfig, seeds, at_depth: int = experiments.STORED_DEPTH_9,
                  targets=None) -> Sweep:
    """Chapter 9's training (:func:`compbook.cppn.runs.experiments.dense_and_sp` with ``cfg``): every image of
    ``targets`` (default all six) at depth ``at_depth``, one config per seed."""
    checks.instance(cfg, "cfg", experiments.UnknownConfig)
    configs = _dense_sp_configs("unknown", SOURCES["unknown"] if targets is None else targets, [at_depth], seeds,
                                cfg.res, cfg.width, cfg.steps, cfg.lr, cfg.sp)
    return _dense_sp_sweep("unknown", configs, f"{COMMAND} --chapters 9")


def tiny_sweep() -> Sweep:
    """Chapter 7's sweep at toy size, seconds on one CPU: depths 1 and 2 x seeds 0 and 1, width 4, the 16 px
    ``"rings"`` pattern, 20 steps and one SP round of 5 (each depth's two seeds one stack)."""
    cfg = experiments.DepthConfig(res=16, width=4, steps=20, sp=dict(threshold=0.9, rounds=1, retrain_steps=5))
    return depth_sweep(cfg, (0, 1), depths=(1, 2), targets=("rings",), source="pattern")


# -- chapter 6: pruning methods at matched sparsity ----------------------------------------------------------------
PRUNING_FIELDS = ("res", "depth", "width", "layout", "dense_steps", "sp", "lt_rounds")


def pruning_sweep(cfg: experiments.PruningConfig, seeds, target: str = "skull") -> Sweep:
    """Chapter 6 (:func:`compbook.cppn.runs.experiments.pruning_methods`) for each seed on the Picbreeder ``target``:
    one config per seed (each seed's methods already train as one stack inside)."""
    checks.instance(cfg, "cfg", experiments.PruningConfig)
    base = {f: getattr(cfg, f) for f in PRUNING_FIELDS} | {"layout": pairs(cfg.layout), "sp": dict(cfg.sp)}
    configs = [dict(base, target=target_spec("picbreeder", target), seed=s) for s in _seeds(seeds)]
    return Sweep(NAMES["pruning"], configs, run=train_pruning, model_bytes=pruning_bytes,
                 command=f"{COMMAND} --chapters 6")


def _pruning_cfg(config: dict) -> experiments.PruningConfig:
    fields = {f: config[f] for f in PRUNING_FIELDS} | {"layout": layout_of(config["layout"])}
    return dataclasses.replace(experiments.PruningConfig(), **fields)


def pruning_bytes(config: dict) -> int:
    """Chapter 6 trains six networks of one seed at once (dense, four baselines, Lottery Ticket)."""
    return 6 * train_bytes([config["width"]] * config["depth"], config["res"])


def _pack_prune(r: prune.PruneResult) -> dict:
    return {"model": pack(r.model), "sparsity": list(r.sparsity), "losses": list(r.losses), "curve": r.curve,
            "removed": [[[int(l), int(k)] for l, k in step] for step in r.removed], "config": dict(r.config)}


def _unpack_prune(d: dict, template: CPPN) -> prune.PruneResult:
    model = unpack(d["model"], template)
    return prune.PruneResult(model, [m.clone() for m in model.masks], d["sparsity"], d["losses"],
                             [[tuple(n) for n in step] for step in d["removed"]], d["curve"], d["config"])


def train_pruning(config: dict) -> dict:
    """One seed of chapter 6; record: the dense fit (network, losses), SP's and the Lottery Ticket's results,
    every method's masks and retrained network, the curves, in the chapter's order (``names``, ``mask_names``)."""
    t = config["target"]
    target = target_image(t["source"], t["name"], config["res"])
    run = experiments.pruning_methods(target, config["seed"], _pruning_cfg(config))
    d = run.dense
    return {"dense": {"model": pack(d.model, masks=False), "losses": d.losses, "seconds": d.seconds,
                      "config": dict(d.config)},
            "sp": _pack_prune(run.sp), "lottery": _pack_prune(run.lottery),
            "names": list(run.final), "mask_names": list(run.masks),
            "masks": {n: {f"m{l}": m.clone() for l, m in enumerate(ms)} for n, ms in run.masks.items()},
            "final": {n: pack(m) for n, m in run.final.items()}, "curves": dict(run.curves),
            "retrain_seconds": run.retrain_seconds}


def pruning_run(config: dict, record: dict) -> experiments.PruningRun:
    """The :class:`~compbook.cppn.runs.experiments.PruningRun` a :func:`pruning_sweep` record holds."""
    init = uniform_cppn(config["depth"], config["width"], layout_of(config["layout"]), seed=config["seed"])
    d = record["dense"]
    dense = train.FitResult([unpack(d["model"], init)], d["losses"], d["seconds"], d["config"])
    masks = {n: [record["masks"][n][f"m{l}"] for l in range(len(init.shapes))] for n in record["mask_names"]}
    return experiments.PruningRun(init, dense, _unpack_prune(record["sp"], init),
                                  _unpack_prune(record["lottery"], init), masks,
                                  {n: unpack(record["final"][n], init) for n in record["names"]},
                                  {n: record["curves"][n] for n in record["names"]}, record["retrain_seconds"])


# -- chapter 8: optimizers at each rate, on chapter 8's masks or FER's architecture ---------------------------------
def optimizer_masks_sweep(cfg: experiments.OptimizerConfig, target: str = "skull") -> Sweep:
    """Chapter 8's shared masks (:func:`compbook.cppn.runs.experiments.optimizer_masks`): one config."""
    checks.instance(cfg, "cfg", experiments.OptimizerConfig)
    c = dict(target=target_spec("picbreeder", target), res=cfg.res, depth=cfg.depth, width=cfg.width,
             steps=cfg.steps, sp=dict(cfg.sp), mask_seed=cfg.mask_seed)
    return Sweep(NAMES["optimizer-masks"], [c], run=train_optimizer_masks, command=f"{COMMAND} --chapters 8")


def train_optimizer_masks(config: dict) -> dict:
    """Record: the masks ``m<l>`` of :func:`compbook.cppn.runs.experiments.optimizer_masks`."""
    cfg = dataclasses.replace(experiments.OptimizerConfig(), **_without(config, "target"))
    target = target_image(config["target"]["source"], config["target"]["name"], config["res"])
    return {"masks": {f"m{l}": m.clone() for l, m in enumerate(experiments.optimizer_masks(target, cfg))}}


def _grid_configs(target: dict, res: int, arch: dict, masks, steps: int, grid: dict, seeds,
                  straight_through: bool) -> list[dict]:
    if not isinstance(grid, dict) or not grid:
        raise ValueError(f"grid must be a dict optimizer -> list of rates, got {grid!r}")
    for opt, lrs in grid.items():
        checks.choice(opt, "grid: optimizer", train.OPTIMIZERS)
        checks.sequence(lrs, f"grid[{opt!r}]")
    return [dict(target=target, res=res, arch=arch, masks=masks, steps=steps, straight_through=straight_through,
                 optimizer=opt, lr=checks.real(lr, f"grid[{opt!r}]: lr", 0, low_open=True), seed=s)
            for opt, lrs in grid.items() for lr in lrs for s in _seeds(seeds)]


def optimizer_sweep(cfg: experiments.OptimizerConfig, seeds, masks, target: str = "skull") -> Sweep:
    """Chapter 8's grid (:func:`compbook.cppn.runs.experiments.optimizer_comparison`): fresh weights per seed with the
    shared ``masks`` (one tensor per layer, carried in every config), each optimizer at each rate of ``cfg.grid``."""
    checks.instance(cfg, "cfg", experiments.OptimizerConfig)
    arch = dict(kind="uniform", depth=cfg.depth, width=cfg.width, layout=pairs(depth.mixed_layout(cfg.width)))
    shapes = uniform_cppn(cfg.depth, cfg.width, layout_of(arch["layout"])).shapes
    bits = mask_bits(masks)
    bits_masks(bits, shapes)                                     # the masks fit the architecture
    configs = _grid_configs(target_spec("picbreeder", target), cfg.res, arch, bits, cfg.steps, cfg.grid, seeds, True)
    return _grid_sweep("optimizer", configs, f"{COMMAND} --chapters 8")


def fer_optimizer_sweep(cfg: experiments.FerOptimizerConfig, seeds) -> Sweep:
    """Chapter 8 on FER's architecture (:func:`compbook.cppn.runs.experiments.fer_optimizers`): dense networks of
    ``cfg.arch`` (default FER's for ``cfg.target``), FER's trainer, each optimizer at each rate of ``cfg.grid``."""
    from .. import fer
    checks.instance(cfg, "cfg", experiments.FerOptimizerConfig)
    spec = target_spec("picbreeder", cfg.target)
    arch = dict(kind="fer", arch=cfg.arch or fer.FER_ARCH[cfg.target])
    fer.arch_layout(arch["arch"])                                # a readable architecture
    configs = _grid_configs(spec, cfg.res, arch, None, cfg.steps, cfg.grid, seeds, False)
    return _grid_sweep("fer-optimizer", configs, f"{COMMAND} --chapters 8fer")


def _grid_sweep(name: str, configs: list, command: str) -> Sweep:
    return Sweep(NAMES[name], configs, run=train_grid, run_many=train_grid_many, group=grid_group,
                 model_bytes=grid_bytes, command=command)


def grid_start(config: dict) -> CPPN:
    """A grid config's untrained network: its seed's weights, with the config's masks."""
    a = config["arch"]
    if a["kind"] == "fer":
        from .. import fer
        net = CPPN(fer.arch_layout(a["arch"]), "hsv", seed=config["seed"])
    else:
        net = uniform_cppn(a["depth"], a["width"], layout_of(a["layout"]), seed=config["seed"])
    return net if config["masks"] is None else net.clone_with(masks=bits_masks(config["masks"], net.shapes))


def train_grid_many(configs: list) -> list[dict]:
    """Train one group's configs (:func:`grid_group`: one optimizer and rate) as one stack. Record: the network
    ``net`` (weights; its masks are the config's), the loss before each step ``losses`` ``(steps,)``,
    ``final_loss``, and the stack's ``seconds``."""
    c = configs[0]
    if any(grid_group(x) != grid_group(c) for x in configs):
        raise ValueError("configs: a stack must share everything but the seed")
    target = target_image(c["target"]["source"], c["target"]["name"], c["res"])
    fit = train.fit_many([grid_start(x) for x in configs], target, c["steps"], lr=c["lr"], optimizer=c["optimizer"],
                         progress=False, straight_through=c["straight_through"])
    return [{"net": pack(m, masks=False), "losses": fit.losses[:, b].copy(), "final_loss": float(fit.final_loss[b]),
             "seconds": fit.seconds} for b, m in enumerate(fit.models)]


def train_grid(config: dict) -> dict:
    """One config of :func:`train_grid_many` (a stack of one)."""
    return train_grid_many([config])[0]


def grid_group(config: dict) -> dict:
    """What a stack's configs share: everything but ``seed``."""
    return _without(config, "seed")


def grid_bytes(config: dict) -> int:
    """One network's training memory (:func:`train_bytes`)."""
    return train_bytes([len(layer) for layer in grid_start(config).activations], config["res"])


def optimizer_run(by_config, grid: dict, masks=None) -> experiments.OptimizerRun:
    """The :class:`~compbook.cppn.runs.experiments.OptimizerRun` of a grid sweep's ``(config, record)`` pairs
    (:attr:`compbook.runs.sweeps.Report.by_config`): one :class:`~compbook.cppn.train.FitResult` per (optimizer, rate)
    with the seeds in config order, each optimizer's best rate."""
    runs = {}
    for opt, lrs in grid.items():
        for lr in lrs:
            mine = [(c, r) for c, r in by_config if c["optimizer"] == opt and c["lr"] == lr]
            if not mine or any(r is None for _, r in mine):
                raise ValueError(f"by_config: no complete records for optimizer {opt!r} at lr {lr}")
            models = [unpack(r["net"], grid_start(c)) for c, r in mine]
            losses = np.stack([r["losses"] for _, r in mine], axis=1)
            final = np.array([r["final_loss"] for _, r in mine], dtype=np.float32)
            runs[(opt, lr)] = train.FitResult(models, losses, max(r["seconds"] for _, r in mine),
                                              dict(steps=len(losses), lr=lr, res=mine[0][0]["res"],
                                                   final_loss=final))
    return experiments.optimizer_run(masks, runs, grid)



# -- the stored re-read's chapters, trained on the runner -----------------------------------------------------------
def run_sweep(sweep: Sweep, store=None, **options):
    """``compbook.runs.sweeps.run(sweep, store_for(sweep.name, store), **options)`` (default: local, one worker, no
    progress bar), checked: ``RuntimeError`` naming every config that failed."""
    from ...runs import sweeps
    return sweeps.run(sweep, store_for(sweep.name, store), **(dict(progress=False) | options)).check()


def run_chapter6(seeds, sample, cfg: experiments.PruningConfig | None = None, store=None, **options) -> dict:
    """:func:`compbook.cppn.runs.experiments.run_chapter6` with its seeds trained by :func:`pruning_sweep`."""
    cfg = cfg or experiments.PruningConfig()
    report = run_sweep(pruning_sweep(cfg, seeds), store, **options)
    return experiments.run_chapter6(seeds, sample, [pruning_run(c, r) for c, r in report.by_config], cfg)


def run_chapter7(seeds, sample, cfg: experiments.DepthConfig | None = None, store=None, **options) -> dict:
    """:func:`compbook.cppn.runs.experiments.run_chapter7` with its networks trained by :func:`depth_sweep`, then
    scored here as :func:`compbook.cppn.depth.depth_sweep` scores them."""
    from .. import panel
    cfg = cfg or experiments.DepthConfig()
    report = run_sweep(depth_sweep(cfg, seeds), store, **options)
    models = {n: {} for n in cfg.targets}
    for c, r in report.by_config:
        models[c["target"]["name"]][(c["depth"], c["seed"])] = dense_sp_models(c, r)[1]
    scored = {}
    for n, nets in models.items():
        rows, scores = depth.score_models(nets, target_image("picbreeder", n, cfg.res), panel.default_panel(), n,
                                          dict(delta=cfg.delta, sample=sample))
        scored[n] = depth.DepthSweep(rows, nets, scores, report.seconds, dict(sweep=NAMES["depth"], concept=n))
    return experiments.run_chapter7(seeds, sample, scored, cfg)


def run_chapter8(seeds, sample, cfg: experiments.OptimizerConfig | None = None, store=None, **options) -> dict:
    """:func:`compbook.cppn.runs.experiments.run_chapter8` with the masks and the grid trained by
    :func:`optimizer_masks_sweep` and :func:`optimizer_sweep`."""
    cfg = cfg or experiments.OptimizerConfig()
    (record,) = run_sweep(optimizer_masks_sweep(cfg), store, **options).records.values()
    masks = [record["masks"][f"m{l}"] for l in range(len(record["masks"]))]
    report = run_sweep(optimizer_sweep(cfg, seeds, masks), store, **options)
    return experiments.run_chapter8(seeds, sample, optimizer_run(report.by_config, cfg.grid, masks), cfg)


def run_chapter9(seeds, sample, cfg: experiments.UnknownConfig | None = None, store=None, **options) -> dict:
    """:func:`compbook.cppn.runs.experiments.run_chapter9` with its networks trained by :func:`unknown_sweep`."""
    cfg = cfg or experiments.UnknownConfig()
    report = run_sweep(unknown_sweep(cfg, seeds), store, **options)
    trained = {n: ([], []) for n in SOURCES["unknown"]}
    for c, r in report.by_config:
        for kept, net in zip(trained[c["target"]["name"]], dense_sp_models(c, r)):
            kept.append(net)
    return experiments.run_chapter9(seeds, sample, trained, cfg)


def run_chapter8_fer(seeds, sample, cfg: experiments.FerOptimizerConfig | None = None, store=None,
                     **options) -> dict:
    """:func:`compbook.cppn.runs.experiments.run_chapter8_fer` with the grid trained by :func:`fer_optimizer_sweep`."""
    cfg = cfg or experiments.FerOptimizerConfig()
    report = run_sweep(fer_optimizer_sweep(cfg, seeds), store, **options)
    return experiments.run_chapter8_fer(seeds, sample, optimizer_run(report.by_config, cfg.grid), cfg)


#: the stored run's chapters whose networks these sweeps train
RUNNERS = {"6": run_chapter6, "7": run_chapter7, "8": run_chapter8, "9": run_chapter9, "8fer": run_chapter8_fer}


def stored_runners(store=None, **options) -> dict:
    """Runners for :func:`compbook.cppn.runs.experiments.run_stored`: :data:`RUNNERS` with ``store`` (the root of
    :func:`store_for`) and the runner's ``options`` (``backend``, ``address``, ``workers``, ...), the other
    chapters as :data:`compbook.cppn.runs.experiments.RUNNERS` runs them."""
    return experiments.RUNNERS | {ch: functools.partial(f, store=store, **options) for ch, f in RUNNERS.items()}
