"""Part B's command lines: ``python -m compbook.binding <command> [options]`` (what made ``data/binding/``).

* ``clevr``: train the CLEVR-2D dual encoders of chapters 10-11 (:mod:`compbook.binding.clevr`);
* ``sweep``: the coverage sweep of controlled models, ``--rescore`` its stored weights, ``--recipe-check``
  (:mod:`compbook.binding.runs.sweep`, chapter 13); its models run on the runner (:mod:`compbook.binding.runs.tasks`,
  ``--backend local|ray --address ADDR --workers N --retries N --per-task N``);
* ``recipe``: controlled models by the paper's released recipe, scaled (:mod:`compbook.binding.recipe.train`, chapter
  13's go / no-go; ``COMPBOOK_MODE=full``: the released scale, for a GPU, stored under ``data/binding/full/``), one
  runner config per coverage (the same options);
* ``complexity``: the binding-complexity table of a stored sweep (:mod:`compbook.binding.complexity`, chapter 12).

The library modules hold no argument parsing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import config, results
from ..cli import dispatch
from ..results import door

PROG = "python -m compbook.binding"


def clevr(argv: Sequence[str]) -> int:
    """``clevr [--retrain] [--swap both|on|off]``."""
    from .clevr import checkpoint_name, load_or_train
    p = argparse.ArgumentParser(prog=f"{PROG} clevr", description="Train the CLEVR-2D dual encoders of "
                                                                   "chapters 10-11.")
    p.add_argument("--retrain", action="store_true", help="train even when data/binding/ has the models")
    p.add_argument("--swap", choices=["both", "on", "off"], default="both")
    a = p.parse_args(argv)
    for sw in {"both": (False, True), "on": (True,), "off": (False,)}[a.swap]:
        stack, setup, info = load_or_train(sw, retrain=a.retrain)
        print(checkpoint_name(sw, setup), "seconds", info["seconds"], "best steps", info["best_step"])
    return 0


def complexity(argv: Sequence[str]) -> int:
    """``complexity [--n-values 5]``: the table for a saved sweep -> ``data/binding/complexity_V<n>.json``."""
    from .complexity import controlled_complexity, default_complexity
    from .runs.sweep import load_sweep
    ap = argparse.ArgumentParser(prog=f"{PROG} complexity", description=complexity.__doc__)
    ap.add_argument("--sweep-dir", default=str(door.made_path("binding")))
    ap.add_argument("--n-values", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: compbook's, 1)")
    args = ap.parse_args(argv)
    config.set_threads(args.threads)
    cfg = default_complexity()
    rows = controlled_complexity(load_sweep(args.n_values, args.sweep_dir), cfg)
    out = Path(args.sweep_dir) / f"complexity_V{args.n_values}.json"
    results.write_json(out, {"config": asdict(cfg), "rows": rows})
    print(out)
    return 0


def sweep(argv: Sequence[str]) -> int:
    """``sweep [--sizes ...]``, ``sweep --rescore``, ``sweep --recipe-check NAME=JSON``."""
    from .. import checks
    from ..runs import sweeps
    from .controlled import ControlledConfig
    from .recipe.model import store_dir
    from .runs.sweep import default_sweep, recipe_check, rescore, run_size
    from .runs.tasks import default_store
    ap = argparse.ArgumentParser(prog=f"{PROG} sweep",
                                 description="Train the coverage sweep of controlled models (chapter 13).")
    ap.add_argument("--out", default=str(store_dir()),
                    help="where each size's record goes (default: the mode's store, %(default)s)")
    ap.add_argument("--store", default=str(default_store()),
                    help="each model's record, kept as soon as its stack is trained: a run resumes with the models "
                         "missing there, and a model stored there is not trained again (default %(default)s)")
    ap.add_argument("--sizes", type=int, nargs="*", help="values per concept (default: the mode's sweep)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: compbook's, 1: on a shared 2-core machine two OpenMP "
                         "threads wait for each other at every small op; see benchmarks/bench_threads.py)")
    ap.add_argument("--rescore", action="store_true",
                    help="recompute the unseen-object scores of the saved sizes from their weights (no training)")
    ap.add_argument("--recipe-check", metavar="NAME=JSON", default=None,
                    help='train one model per --coverages with ControlledConfig(**JSON) for each of --sizes and '
                         'append binding on seen / unseen objects to OUT/recipes.json, e.g. '
                         '\'big={"n_layers": 2, "d_model": 64, "batch": 64, "lr": 0.002, "steps": 3000}\'')
    ap.add_argument("--coverages", type=float, nargs="*",
                    help="coverages (default: the mode's sweep; --recipe-check: 0.2 0.5 0.9)")
    ap.add_argument("--seeds", type=int, nargs="*", help="seeds per coverage (default: the mode's sweep)")
    sweeps.add_arguments(ap)
    args = ap.parse_args(argv)
    options = sweeps.options(args)
    config.set_threads(args.threads)
    sw = default_sweep()
    sw = replace(sw, coverages=tuple(args.coverages or sw.coverages), seeds=tuple(args.seeds or sw.seeds))
    if args.recipe_check:
        name, overrides = args.recipe_check.split("=", 1)
        path = Path(args.out) / "recipes.json"
        for v in args.sizes or sw.n_values:
            cfg = ControlledConfig(n_values=v, **json.loads(overrides))
            out = recipe_check(cfg, args.coverages or [0.2, 0.5, 0.9])
            done = results.json_file(path, "recipe checks") if path.exists() else {}
            rows = done.get("rows", []) + [{"name": name, "n_objects": v ** 3} | out]
            results.write_json(path, {"rows": rows}, results.joined(done.get("made_by"), results.made_by(path)))
            print(name, f"|O|={v ** 3}:", {k: np.round(out[k], 2).tolist() for k in
                                           ("bind_seen", "bind_unseen", "recognition")}, out["seconds"], "s")
        return 0
    if args.rescore:
        for v in args.sizes or sw.n_values:
            rec = rescore(v, args.out)
            print(f"|O|={rec['n_objects']}:", " ".join(f"{c:.1f}:{a:.2f}/{b:.2f}" for c, a, b in
                                                     zip(rec["coverages"], rec["test_recognition"],
                                                         rec["test_binding"])))
        return 0
    command = results.current_command() or f"{PROG} sweep " + shlex.join(argv)
    for v in args.sizes or sw.n_values:
        cfg = replace(ControlledConfig.for_mode(), n_values=v)
        rec = run_size(sw, cfg, args.out, store=args.store, command=command, **options)
        print(f"|O|={rec['n_objects']}: {rec['train_seconds']:.0f} s;",
              " ".join(f"{c:.1f}:{a:.2f}" for c, a in zip(rec["coverages"], rec["test_recognition"])))
    return 0


def recipe(argv: Sequence[str]) -> int:
    """``python -m compbook.binding recipe --coverages 0.5`` trains and stores one model per coverage, in
    sequence (CPU mode: the miniature; ``COMPBOOK_MODE=full``: the released recipe, on a GPU when present)."""
    from .. import checks, config
    from ..runs import sweeps
    from .recipe.train import lr_probe, train_recipe
    from .recipe.config import RecipeConfig
    from .recipe.model import store_dir
    from .runs.tasks import recipe_sweep, store_recipe
    argv = list(argv)
    ap = argparse.ArgumentParser(prog=f"{PROG} recipe",
                                 description="Train controlled models by the released recipe (scaled).")
    ap.add_argument("--coverages", nargs="+", type=float, default=[0.5])
    ap.add_argument("--values", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--eval-scenes", type=int, default=None)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--object-queries", type=int, default=None, help="released 64 (our diagnostic: more)")
    ap.add_argument("--swaps", type=int, default=None, help="swap negatives per scene (released 1)")
    ap.add_argument("--prefix", default="recipe", help="file name prefix (diagnostic runs: another)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: compbook's, 1)")
    ap.add_argument("--out", default=None, help="where the models go (default data/binding/, full mode "
                                                 "data/binding/full/)")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="resumable training states go here, as <model>_state (default: recipe.default_checkpoint, "
                         "<tmp>/compbook-checkpoints/<model>_<config digest>_state, as run_one)")
    ap.add_argument("--store", default=None,
                    help="the runner's records of the models (default: a temporary folder; a killed run resumes "
                         "from the training states)")
    ap.add_argument("--time-steps", type=int, default=0, help="only time this many steps and exit")
    ap.add_argument("--lr-probe", nargs="*", type=float, default=None, help="lrs to probe (seen objects)")
    ap.add_argument("--probe-steps", type=int, default=1000)
    ap.add_argument("--probes", action="store_true",
                    help="fit the three probes to every recipe model stored in --out (recipe_probes.json)")
    sweeps.add_arguments(ap)
    a = ap.parse_args(argv)
    options = sweeps.options(a)
    config.set_threads(a.threads)
    over = {"seed": a.seed}
    for k, v in (("n_values", a.values), ("steps", a.steps), ("lr", a.lr), ("batch", a.batch),
                 ("eval_scenes", a.eval_scenes),
                 ("n_object_queries", a.object_queries), ("n_swaps", a.swaps)):
        if v is not None:
            over[k] = v
    command = results.current_command() or "python -m compbook.binding recipe " + shlex.join(argv)
    cfg = replace(RecipeConfig.for_mode(), coverage=a.coverages[0], **over)
    out = Path(a.out) if a.out is not None else store_dir()
    if a.time_steps:
        t = time.perf_counter()
        train_recipe(replace(cfg, steps=a.time_steps, eval_every=a.time_steps), progress=False,
                     device=config.device())
        print(f"{(time.perf_counter() - t) / a.time_steps * 1000:.1f} ms/step at batch {cfg.batch}")
        return 0
    if a.probes:
        from .recipe.checks import probe_records
        path = out / "recipe_probes.json"        # models already fitted are kept
        old = results.json_file(path, "recipe probes")["rows"] if path.exists() else []
        rows = old + probe_records(out, skip={r["model"] for r in old})
        results.write_json(path, {"rows": rows}, command)
        print(json.dumps(rows, indent=1))
        return 0
    if a.lr_probe:
        t = time.perf_counter()
        res = lr_probe(cfg, a.lr_probe, a.probe_steps)
        rec = {"config": asdict(cfg), "probe": res, "seconds": round(time.perf_counter() - t, 1)}
        results.write_json(out / "recipe_lr_probe.json", rec, command)
        return 0
    sw = recipe_sweep([replace(cfg, coverage=c) for c in a.coverages], a.prefix, command, a.checkpoint_dir)
    with tempfile.TemporaryDirectory(prefix="compbook-recipe-") if a.store is None else nullcontext(a.store) as st:
        report = sweeps.run(sw, Path(st), **options).check()
        for _, rec in report.by_config:
            store_recipe(rec, out, a.prefix, command)
            print(json.dumps({"final": rec["final"], "floors": rec["floors"], "seconds": rec["seconds"]}))
    return 0


COMMANDS = {"clevr": clevr, "sweep": sweep, "complexity": complexity, "recipe": recipe}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default ``sys.argv[1:]``): one of :data:`COMMANDS`."""
    return dispatch(COMMANDS, PROG, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
