"""Part A's command lines: ``python -m compbook.cppn <command> [options]`` (what made ``data/emc2/``,
``data/judge_cache/`` and ``data/semantic/``).

Commands (``python -m compbook.cppn <command> --help`` for each one's options):

* ``twins``: train SGD twins of the Picbreeder targets (:mod:`compbook.cppn.twins`), or ``--report``;
* ``judges fill|score|show``: fill or summarise a judge cache (:mod:`compbook.cppn.judges.cache`; ``--judge`` a
  name of :mod:`compbook.cppn.judges.registry`; ``fill --server URL`` asks any OpenAI-compatible server,
  :mod:`compbook.cppn.judges.server`), or score many networks (``score``);
* ``semantic train|choose|validate|second|overlap``: the concept CNN's weights; choose the default CPU judge on
  the first model labeller's held-out blind verdicts; validate the choice on a later batch; the judge and the choice
  against a second model labeller; a third model labeller on the overlap set (:mod:`compbook.cppn.audit.labellers`);
* ``labelling sheets|relabel|overlap|agreement|store``: blind verdicts of the model labellers or a reader
  (:mod:`compbook.cppn.audit.labelling`);
* ``reread``: Picbreeder against SGD under every judge (:mod:`compbook.cppn.audit.reread`);
* ``experiments``: chapters 6-9's protocols, stored (:mod:`compbook.cppn.runs.experiments`);
* ``fer``: FER's SGD networks against the Picbreeder renders (:mod:`compbook.cppn.fer`);
* ``counting``: the score under every counting rule, delta policy and judge (:mod:`compbook.cppn.audit.counting`).

The library modules hold no argument parsing: each command below reads its options, calls them, prints and
writes what they return.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

from .. import config, results
from ..cli import dispatch
from ..results import door

PROG = "python -m compbook.cppn"


# -- twins ------------------------------------------------------------------------------------------------------------
def twins(argv: Sequence[str]) -> int:
    """``twins --target T [--steps N --res R --seeds ... --backend ...]`` or ``twins --report``: a sweep of
    :mod:`compbook.runs.sweeps` (:func:`compbook.cppn.runs.scoring_tasks.make_twins`; rerun, it resumes from
    ``--store``)."""
    from ..runs import sweeps
    from .runs import scoring_tasks as st
    from . import twins as tw
    from .paper import figure
    p = argparse.ArgumentParser(prog=f"{PROG} twins", description=tw.__doc__.split("\n")[0])
    p.add_argument("--target", choices=tw.TARGETS, action="append", default=[])
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--lr", type=float, default=None, help="default: FER's (paper.figure('fer_lr'))")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-minutes", type=float, default=None, help="stop after this wall time (steps recorded)")
    p.add_argument("--no-plateau-stop", action="store_true", help="run all --steps even after a plateau")
    p.add_argument("--last-weights", action="store_true", help="store the last weights, not the lowest-loss ones")
    p.add_argument("--out", default=None, help="folder holding emc2/ (default: data/)")
    p.add_argument("--store", default=None, help="the runner's records (default: scoring_tasks.default_store)")
    p.add_argument("--report", action="store_true", help="print MSE / PSNR of the stored twins")
    p.add_argument("--arch", choices=["picbreeder", "fer"], default="picbreeder",
                   help="fer: FER's activation mix per layer, our minibatch + cosine recipe")
    p.add_argument("--minibatch-steps", type=int, default=6000, help="--arch fer: random-pixel steps")
    p.add_argument("--full-steps", type=int, default=400, help="--arch fer: full-batch cosine steps")
    p.add_argument("--straight-through", action="store_true", help="--arch fer: straight-through clips")
    sweeps.add_arguments(p)
    args = p.parse_args(argv)
    if args.arch == "fer" and not args.target:
        p.error("--arch fer trains the targets given with --target")
    config.set_threads(args.threads)
    if args.arch == "fer":    # one resumable task per target and seed (make_fer_twins): run again to resume
        rows, failed = st.make_fer_twins(args.target, args.seeds, args.out, args.store, args.threads, args.max_minutes,
                                         f"{PROG} twins {' '.join(argv)}", sys.stderr.isatty(), sweeps.options(args),
                                         minibatch_steps=args.minibatch_steps, full_steps=args.full_steps, lr=args.lr,
                                         straight_through=args.straight_through)
        print("\n".join(failed + [f"{r['file']}: PSNR {r['psnr_256']:.1f} dB at 256 px, {r['seconds']:.0f} s"
                                   for r in rows]), flush=True)
        return 1 if failed else 0
    recipes = [tw.TwinRecipe(t, args.res, args.steps, args.lr, args.seeds, stop_at_plateau=not args.no_plateau_stop,
                             max_minutes=args.max_minutes, keep_best=not args.last_weights) for t in args.target]
    t0 = time.perf_counter()
    rows = st.make_twins(recipes, args.out, args.store, args.threads, f"{PROG} twins {' '.join(argv)}",
                         sys.stderr.isatty(), sweeps.options(args)) if recipes else []
    for r in rows:
        print(f"{r['file']}: MSE {r['mse_64']:.5f} (64 px), PSNR {r['psnr_64']:.1f} dB (64), "
              f"{r['psnr_256']:.1f} dB (256; FER {figure('fer_psnr_256')[r['target']]})", flush=True)
    for r in [next(r for r in rows if r["target"] == t) for t in args.target]:
        print(f"{r['target']}: {r['steps_run']} steps ({r['stopped_by']}), {r['seconds']:.0f} s training, "
              f"{time.perf_counter() - t0:.0f} s in all", flush=True)
    if args.report or not args.target:
        for r in tw.report(args.out):
            print(json.dumps(r))
    return 0


# -- judges -----------------------------------------------------------------------------------------------------------
def _judges_parser() -> argparse.ArgumentParser:
    from ..runs import sweeps
    from .judges.registry import JUDGES
    p = argparse.ArgumentParser(prog=f"{PROG} judges",
                                description="Fill or inspect EMC2 judge caches (data/judge_cache/).")
    sub = p.add_subparsers(dest="command", required=True)
    f = argparse.ArgumentParser(add_help=False)     # the options fill and score share
    f.add_argument("--genome", action="append", default=[], help="a Picbreeder genome (skull, butterfly, apple)")
    f.add_argument("--checkpoint", action="append", default=[], help="a compbook checkpoint (save_cppn)")
    f.add_argument("--concept", help="what the images show (default: the genome's name; required for checkpoints)")
    f.add_argument("--judge", choices=[n for n in JUDGES if n != "image-reference"], default=None,
                   help="a judge of compbook.cppn.judges.registry (default: server with --server, else vlm;"
                        " image-reference needs a target image)")
    g = f.add_argument_group("VLM judge")
    g.add_argument("--model-id", default=None, help="default compbook.cppn.judges.vlm.DEFAULT_MODEL")
    g.add_argument("--revision", default=None,
                   help="a commit hash pins the weights (default: main; with --server: the hash it loaded)")
    g.add_argument("--prompt", default=None, help="with {concept}; default compbook.cppn.judges.vlm.DEFAULT_PROMPT")
    g.add_argument("--max-new-tokens", type=int, default=None)
    g.add_argument("--image-size", type=int, default=None)
    g.add_argument("--batch-size", type=int, default=8, help="images per generate call")
    g.add_argument("--device", default=None)
    g.add_argument("--device-map", default=None, help="e.g. auto (needs accelerate)")
    v = f.add_argument_group("server judge (any OpenAI-compatible server: vLLM, SGLang, transformers serve)")
    v.add_argument("--server", help="its base URL, e.g. http://localhost:8000/v1")
    v.add_argument("--model", help="the served model id (default Qwen/Qwen3-VL-4B-Thinking)")
    v.add_argument("--concurrency", type=int, default=8, help="requests in flight at once")
    v.add_argument("--timeout", type=float, default=60.0, help="seconds per request, retries included")
    v.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    v.add_argument("--request-seed", type=int, default=0, help="the requests' sampling seed")
    v.add_argument("--max-unreadable", type=float, default=None,
                   help="the largest share of a batch's answers that may be unreadable (default 0.5; more: refused)")
    s = f.add_argument_group("SSIM and semantic judges")
    s.add_argument("--threshold", type=float, default=None,
                   help="ssim, reference, classifier (default: SSIM_THRESHOLD; choice.json's)")
    e = f.add_argument_group("compositional_score (defaults: compbook.cppn.emc2's)")
    e.add_argument("--delta", type=float)
    e.add_argument("--res", type=int)
    e.add_argument("--policy")
    e.add_argument("--seed", type=int)
    e.add_argument("--engine")
    e.add_argument("--engine-batch-size", type=int, help="compositional_score's batch_size")
    e.add_argument("--sample", type=int, help="score a seeded sample of this many weights (default: all)")
    fill = sub.add_parser("fill", parents=[f],
                          help="ask a judge about every perturbation compositional_score evaluates; store it")
    fill.add_argument("--cache", help="cache file or folder (default: data/judge_cache/)")
    fill.add_argument("--retries", dest="request_retries", type=int, default=3, help="server judge: on 429, 5xx, drops")
    sc = sub.add_parser("score", parents=[f],
                        help="the networks' EMC2 scores, one task each of compbook.runs.sweeps (stored in --store)")
    sc.add_argument("--store", help="the runner's records (default: scoring_tasks.default_store)")
    sc.add_argument("--request-retries", type=int, default=3, help="server judge: fill's --retries")
    sweeps.add_arguments(sc)
    sh = sub.add_parser("show", help="summarise cache files")
    sh.add_argument("paths", nargs="*", help="cache files or folders (default: data/judge_cache/)")
    return p


def _judge_choice(args) -> tuple[str, dict]:
    """The judge ``--judge`` names (default: server with ``--server``, else vlm) and its options (JSON-able; the
    server's URL and API key apart)."""
    name = args.judge or ("server" if args.server else "vlm")
    if name == "server":
        if not args.server:
            raise SystemExit(f"{args.command}: --judge server needs --server URL")
        given = (("model", args.model or args.model_id), ("prompt", args.prompt), ("max_tokens", args.max_new_tokens),
                 ("image_size", args.image_size), ("max_unreadable", args.max_unreadable))
        return name, {k: v for k, v in given if v is not None} | {
            "revision": args.revision, "concurrency": args.concurrency, "timeout": args.timeout,
            "retries": args.request_retries, "seed": args.request_seed}
    if name != "vlm":
        return name, {} if args.threshold is None else {"threshold": args.threshold}
    given = (("model_id", args.model_id), ("prompt", args.prompt), ("max_new_tokens", args.max_new_tokens),
             ("image_size", args.image_size))
    return name, {k: v for k, v in given if v is not None} | {
        "revision": args.revision, "batch_size": args.batch_size, "device": args.device, "device_map": args.device_map}


def _make_judge(args):
    """The judge ``--judge`` names, from :func:`compbook.cppn.judges.registry.make_judge`."""
    import os
    from .judges.registry import make_judge
    args.judge, options = _judge_choice(args)
    if args.judge == "server":
        options |= {"base_url": args.server, "api_key": os.environ.get(args.api_key_env) or None, "progress": True}
    return make_judge(args.judge, **options)


def _score_settings(args) -> dict:
    """``compositional_score``'s settings given on the command line (the others: its defaults)."""
    given = (("delta", args.delta), ("res", args.res), ("policy", args.policy), ("seed", args.seed),
             ("engine", args.engine), ("batch_size", args.engine_batch_size), ("sample", args.sample))
    return {k: v for k, v in given if v is not None}


def _score(args) -> int:
    """``score``: the networks' scores (:func:`compbook.cppn.runs.scoring_tasks.scoring_sweep`, each task builds the
    judge from its config), one JSON line each."""
    from ..runs import sweeps
    from .runs import scoring_tasks as st
    name, options = _judge_choice(args)
    server = args.server if name == "server" else None
    try:
        spec = st.judge_spec(name, server, **options, **({"api_key_env": args.api_key_env} if server else {}))
        sweep = st.scoring_sweep(args.genome + args.checkpoint, args.concept, spec, server=server,
                                 command=f"{PROG} judges score", **_score_settings(args))
    except ValueError as e:
        raise SystemExit(f"score: {e}") from None
    for row in st.scores(sweep, args.store, sys.stderr.isatty(), sweeps.options(args)):
        print(json.dumps(row))
    return 0


def _models(args) -> list[tuple[str, object, str]]:
    """``(name, CPPN, concept)`` for every ``--genome`` and ``--checkpoint``."""
    from . import picbreeder
    from .data import store
    if not args.genome and not args.checkpoint:
        raise SystemExit("fill: give at least one --genome or --checkpoint")
    if args.checkpoint and not args.concept:
        raise SystemExit("fill: --concept is required with --checkpoint")
    out = [(g, picbreeder.layerize(picbreeder.load_genome(g)), args.concept or g) for g in args.genome]
    return out + [(c, store.load_cppn(c), args.concept) for c in args.checkpoint]


def _fill(args) -> int:
    """``fill``: run ``compositional_score`` with a ``CachedJudge(mode="fill")`` for each model."""
    from . import emc2
    from ..runs.serving import ServerError
    from .judges.cache import CachedJudge, cache_path
    models = _models(args)
    judge = _make_judge(args)
    cached = CachedJudge(args.cache if args.cache else cache_path(judge.identity), judge, mode="fill")
    kwargs = _score_settings(args)
    print(f"judge: {judge.identity}\ncache: {cached.path} ({len(cached)} entries"
          + (f", {cached.recovered} recovered from an interrupted fill)" if cached.recovered else ")"))
    for name, model, concept in models:
        before = (cached.hits, cached.misses)
        try:
            result = emc2.compositional_score(model, cached, concept, progress=True, **kwargs)
        except ServerError as e:
            print(f"fill: {e}\n{len(cached)} verdicts are stored in {cached.path}; rerun the same command to "
                  f"ask only the missing ones", file=sys.stderr)
            return 1
        finally:
            getattr(judge, "close", lambda: None)()
        print(f"{name} ({concept}): score {result.score:.3f} over {len(result.verdicts)} weights; "
              f"{cached.hits - before[0]} stored, {cached.misses - before[1]} new verdicts")
    unparsed = getattr(judge, "unparsed", [])
    if unparsed:
        print(f"warning: {len(unparsed)} answers could not be parsed and count as not preserved "
              f"(raise --max-new-tokens?); last: {unparsed[-1]['text'][-200:]!r}")
    print(f"wrote {cached.path} ({len(cached)} entries)")
    return 0


def _show(args) -> int:
    """``show``: identity, entry count and fraction preserved per concept of each cache file. In a folder, JSON
    files that are not caches are listed as skipped; a file named on the command line must be a cache (exit
    status 2 otherwise). A damaged cache (edited, truncated) stops the command with its ``ValueError``."""
    from .judges.cache import cache_folder, is_cache_file, read_cache
    paths = [Path(p) for p in args.paths] or [cache_folder()]
    files, skipped = [], []
    for p in paths:
        for f in (sorted(p.glob("*.json")) if p.is_dir() else [p]):
            (files if is_cache_file(f) else skipped).append((f, p.is_dir()))
    named = [str(f) for f, in_folder in skipped if not in_folder]
    if named:
        print(f"judges show: not a judge cache: {', '.join(named)}", file=sys.stderr)
        return 2
    for f, _ in files:
        identity, entries = read_cache(f)
        print(f"{f}\n  judge: {identity}\n  {len(entries)} verdicts")
        for c in sorted({e["concept"] for e in entries.values()}):
            v = [e["verdict"] for e in entries.values() if e["concept"] == c]
            print(f"  {c}: {len(v)} verdicts, {sum(v) / len(v):.1%} preserved")
    for f, _ in skipped:
        print(f"{f}\n  skipped: not a judge cache")
    if not files:
        print("no cache files")
    return 0


def judges(argv: Sequence[str]) -> int:
    """``judges fill ...`` / ``judges score ...`` / ``judges show ...``."""
    args = _judges_parser().parse_args(argv)
    return {"fill": _fill, "score": _score, "show": _show}[args.command](args)


# -- semantic judges and their choice ---------------------------------------------------------------------------------
def _print_tables(tables: dict) -> None:
    for name, rows in tables.items():
        for r in rows:
            print(f"{name:24s} {r.get('split', ''):8s} {r['network']:10s} n={r['n']:3d} agree "
                  f"{r['agreement']:.3f} bal.acc {r['balanced_accuracy']:.3f} kappa {r['kappa']:.3f}")


def _write(path: Path, out: dict) -> None:
    """Write a result with its ``made_by`` and record it in the registry (:func:`compbook.results.write_json`)."""
    results.write_json(path, out)


def _choose() -> int:
    """``data/semantic/choice.json`` (:func:`labellers.choice_run`)."""
    from .audit import labellers
    from .judges import semantic
    result = labellers.choice_run()
    _write(semantic.choice_path(), result)
    _print_tables(result["tables"])
    print(f"thresholds {result['thresholds']}; chosen: {result['chosen']}")
    return 0


def _validate(key_name: str) -> int:
    """``data/semantic/validation_<batch>.json`` (:func:`labellers.validation_run`)."""
    from .audit import labellers
    result = labellers.validation_run(key_name)
    _write(out := labellers.validation_path(key_name), result)
    _print_tables(result["tables"])
    print(f"wrote {out}")
    return 0


def _second_labeller(key_name: str, labeller: str, first_keys: Sequence[str], seed: int) -> int:
    """``data/semantic/validation_<batch>.json`` (:func:`labellers.second_labeller_run`)."""
    from .audit import labellers
    command = (f"{PROG} semantic second --key {key_name} --labeller '{labeller}' --first-keys "
               f"{' '.join(first_keys)} --seed {seed}")
    out = labellers.second_labeller_run(key_name, labeller, first_keys, seed, command)
    _write(path := labellers.validation_path(key_name), out)
    for k, v in out["fixed"].items():
        for r in v["rows"]:
            print(f"{k:10s} {r['network']:10s} n={r['n']:3d} can't tell {r['cant_tell']:2d} agree "
                  f"{r['agreement']:.3f} bal.acc {r['balanced_accuracy']:.3f} kappa {r['kappa']:.3f}")
    for d in out["cross"]["directions"]:
        print(f"chosen on {d['chosen_on']}: {d['chosen']} {d['thresholds']}")
    print(f"wrote {path} in {out['seconds']} s")
    return 0


def _overlap_semantic(key_name: str, labeller: str) -> int:
    """``data/semantic/overlap.json`` (:func:`labellers.overlap_run`)."""
    from .audit import labellers
    from .judges import semantic
    out = labellers.overlap_run(key_name, labeller, f"{PROG} semantic overlap --key {key_name} --labeller "
                                                    f"'{labeller}'")
    _write(path := semantic.choice_path().parent / "overlap.json", out)
    for g in out["groups"]:
        p = g["labellers"]
        print(f"{g['labeller']:16s} n={g['n']} exact {p['exact']:.2f} yes/no {p['agreement_yes_no']:.2f} "
              f"kappa {p['kappa_yes_no']:.2f} yes {p['first']['yes_rate']:.2f} vs {p['second']['yes_rate']:.2f}")
    print(f"wrote {path} in {out['seconds']} s")
    return 0


def semantic(argv: Sequence[str]) -> int:
    """``semantic train`` (the CNN's weights), ``semantic choose``, ``validate``, ``second`` or ``overlap``."""
    from .audit.labelling import LABELLER_KEYS, SECOND_LABELLER, THIRD_LABELLER
    p = argparse.ArgumentParser(prog=f"{PROG} semantic")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train the concept CNN on augmentations of the reference renders")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch", type=int, default=96)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=None, help="torch threads (default: compbook's, 1)")
    sub.add_parser("choose", help="thresholds on the calibration half, the default on the held-out half")
    v = sub.add_parser("validate", help="the chosen thresholds on a later labelled batch (not in the choice)")
    v.add_argument("--key", default="labeller_key_batch2.json", help="its key, in data/judge_cache/")
    w = sub.add_parser("second", help="the default judge and the choice against another labeller's verdicts")
    w.add_argument("--key", default="labeller_key_batch3.json", help="its key, in data/judge_cache/")
    w.add_argument("--labeller", default=SECOND_LABELLER, help="the labeller whose verdicts are stored")
    w.add_argument("--first-keys", nargs="+", default=list(LABELLER_KEYS),
                   help="the first labeller's keys (the cross-labeller choice)")
    w.add_argument("--seed", type=int, default=0)
    o = sub.add_parser("overlap", help="a third labeller on items labellers 1 and 2 answered (overlap set)")
    o.add_argument("--key", default="labeller_key_overlap.json", help="its key, in data/judge_cache/")
    o.add_argument("--labeller", default=THIRD_LABELLER, help="the labeller whose verdicts are stored")
    args = p.parse_args(argv)
    if args.command == "train":
        config.set_threads(args.threads)
    if args.command == "choose":
        return _choose()
    if args.command == "overlap":
        return _overlap_semantic(args.key, args.labeller)
    if args.command == "second":
        return _second_labeller(args.key, args.labeller, args.first_keys, args.seed)
    if args.command == "validate":
        return _validate(args.key)
    from ..results import checkpoints
    from .judges import augment, semantic as sem
    t0 = time.perf_counter()
    net, curve = sem.train_classifier(args.steps, args.batch, seed=args.seed, progress=sys.stderr.isatty())
    path = sem.weights_path()
    meta = {"made_by": f"{PROG} semantic train --steps {args.steps} --batch {args.batch} --seed {args.seed}",
            "seconds": round(time.perf_counter() - t0, 1), "loss_every_100": curve, "augmentations": augment.DECLARED}
    checkpoints.save(path, net.state_dict(), meta, format=sem.WEIGHTS_FORMAT)
    print(f"wrote {path} ({meta['seconds']} s); last losses {curve[-3:]}")
    return 0


# -- labelling --------------------------------------------------------------------------------------------------------
def labelling(argv: Sequence[str]) -> int:
    """``labelling sheets|relabel|overlap|store ...`` (see ``data/judge_cache/README.md``)."""
    from .audit import labelling as lab
    from . import twins as tw
    p = argparse.ArgumentParser(prog=f"{PROG} labelling")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sheets", help="plan items of one concept, write the key and the contact sheets")
    s.add_argument("--concept", required=True, choices=tw.TARGETS)
    s.add_argument("--key", required=True, help="the key file (JSON) to write; do not open it while labelling")
    s.add_argument("--out", required=True, help="folder for the sheets")
    s.add_argument("--deltas", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    s.add_argument("--per-picbreeder", type=int, default=22)
    s.add_argument("--per-sgd", type=int, default=8)
    s.add_argument("--kinds", nargs="+", choices=lab.KINDS, default=["picbreeder", "sgd"],
                   help="network kinds to draw items from (fer: FER's own SGD networks; fertwin: stored twins "
                        "of FER's architecture)")
    s.add_argument("--per-fer", type=int, default=None, help="perturbations per delta per FER network")
    s.add_argument("--per-fertwin", type=int, default=None, help="... per twin of FER's architecture")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--start", type=int, default=None,
                   help="first item number (default 1000, 2000, 3000 for skull, butterfly, apple)")
    s.add_argument("--exclude-key", nargs="*", default=[],
                   help="keys of earlier batches: their questions are not asked again")
    r = sub.add_parser("relabel", help="sheets of a shuffled fraction of labelled items, renumbered")
    r.add_argument("--key", nargs="+", required=True)
    r.add_argument("--out-key", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--fraction", type=float, default=0.1)
    r.add_argument("--start", type=int, default=9001, help="first item number of the re-label sheets")
    r.add_argument("--seed", type=int, default=1)
    o = sub.add_parser("overlap", help="items two labellers answered, drawn again for another labeller")
    o.add_argument("--out-key", required=True)
    o.add_argument("--out", required=True, help="folder for the sheets")
    o.add_argument("--seed", type=int, default=20, help="labeller 1's draw; labeller 2: +1, numbering: +2")
    g = sub.add_parser("agreement", help="self-agreement: a re-label pass against the labeller's first answers")
    g.add_argument("--relabel-key", required=True, help="the re-label key ('of': the original item)")
    g.add_argument("--first", required=True, help="the first pass's labels (lines '<item> y|n|?')")
    g.add_argument("--second", required=True, help="the re-label pass's labels")
    g.add_argument("--note", required=True, help="what was re-labelled (stored with the result)")
    g.add_argument("--out", required=True, help="the JSON to write (e.g. data/judge_cache/self_agreement.json)")
    t = sub.add_parser("store", help="write labels (lines '<item> y|n|?') into a verdict cache")
    t.add_argument("--key", nargs="+", required=True)
    t.add_argument("--labels", nargs="+", required=True)
    who = t.add_mutually_exclusive_group()
    who.add_argument("--labeller", default=lab.LABELLER, help="the model labeller whose answers these are (their "
                     "own cache file)")
    who.add_argument("--reader", help="instead: a reader's own (human) answers, stored under this name")
    args = p.parse_args(argv)
    if args.command == "sheets":
        start = 1000 * (tw.TARGETS.index(args.concept) + 1) if args.start is None else args.start
        per_kind = {k: v for k, v in (("fer", args.per_fer), ("fertwin", args.per_fertwin)) if v is not None}
        items = lab.plan_items(lab.networks([args.concept], args.kinds), tuple(args.deltas), args.per_picbreeder,
                               args.per_sgd, args.seed + start, start, per_kind)
        items = lab.without_questions(items, [it for k in args.exclude_key for it in lab.read_key(k)], start)
        lab.write_key(args.key, items, f"key of {args.concept} items (seed {args.seed})")
        sheets = lab.write_sheets(items, lab.render_items(items), args.out)
        print(f"{len(items)} items, {len(sheets)} sheets in {args.out}; key {args.key}")
    elif args.command == "relabel":
        items = lab.relabel_items([it for k in args.key for it in lab.read_key(k)], args.fraction, args.seed,
                                  args.start)
        lab.write_key(args.out_key, items, "re-label key: 'of' is the original item")
        sheets = lab.write_sheets(items, lab.render_items(items), args.out)
        print(f"{len(items)} items, {len(sheets)} sheets in {args.out}")
    elif args.command == "overlap":
        _overlap(args.out_key, args.out, args.seed)
    elif args.command == "agreement":
        from .audit.agreement import self_agreement
        out = self_agreement(lab.read_key(args.relabel_key), lab.read_labels(args.first), lab.read_labels(args.second))
        print(f"wrote {results.write_json(args.out, out | {'note': args.note})}: {out}")
    else:
        items = [it for k in args.key for it in lab.read_key(k)]
        labels = {}
        for f in args.labels:
            labels |= lab.read_labels(f)
        identity = lab.reader_identity(args.reader) if args.reader else lab.labeller_identity(args.labeller)
        print(f"wrote {lab.store_verdicts(items, labels, identity=identity)} ({len(labels)} labels)")
    return 0


def _overlap(out_key: str, out: str, seed: int) -> None:
    """The overlap key and its sheets (:func:`labellers.overlap_items`)."""
    from .audit import labellers, labelling as lab
    items = labellers.overlap_items(seed)
    lab.write_key(out_key, items, f"overlap key: 'of' is the original item of 'batch', answered by 'labeller'; "
                  f"{PROG} labelling overlap --seed {seed}")
    sheets = lab.write_sheets(items, lab.render_items(items), out)
    print(f"{len(items)} items, {len(sheets)} sheets in {out}; key {out_key}")


# -- reread -----------------------------------------------------------------------------------------------------------
def _write_reread(out: dict) -> None:
    path = results.write_json(door.made_path("emc2/reread.json"), out, indent=0)
    for r in out["rows"]:
        print(f"{r['concept']:9s} {r['network']:10s} {r['judge']:24s} d={r['delta']:<4} {r['score']:.3f} "
              f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] n={r['n']}")
    print(f"wrote {path} in {out['seconds']} s")


def reread(argv: Sequence[str]) -> int:
    """``reread [--sample N --pb-sample N --deltas ...]``, ``--concepts`` parts, ``--merge`` parts."""
    from .audit import reread as rr
    from . import twins as tw
    p = argparse.ArgumentParser(prog=f"{PROG} reread")
    p.add_argument("--sample", type=int, default=200, help="weights per SGD twin")
    p.add_argument("--pb-sample", type=int, default=None, help="weights per Picbreeder network (default: all)")
    p.add_argument("--deltas", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    p.add_argument("--concepts", nargs="+", choices=tw.TARGETS, default=None,
                   help="score only these and write a part file (to run concepts in parallel; then --merge)")
    p.add_argument("--merge", nargs="+", default=None, help="part files to merge into data/emc2/reread.json")
    args = p.parse_args(argv)
    if args.merge:
        _write_reread(rr.merge([json.loads(Path(f).read_text()) for f in args.merge]))
        return 0
    made_by = (f"{PROG} reread --sample {args.sample} --pb-sample {args.pb_sample} --deltas "
               f"{' '.join(map(str, args.deltas))}")
    out = rr.run(args.sample, args.pb_sample, tuple(args.deltas), args.concepts, made_by)
    if args.concepts:
        part = door.made_path(f"emc2/reread_part_{'_'.join(out['concepts'])}.json")
        results.write_json(part, out, indent=0)
        print(f"wrote {part} in {out['seconds']} s; merge the parts with --merge")
        return 0
    _write_reread(out)
    return 0


# -- experiments ------------------------------------------------------------------------------------------------------
def experiments(argv: Sequence[str]) -> int:
    """``experiments --write [--chapters 6 7 8 9 theory 6fer 7fer 8fer] [--backend local|ray ...]``: run and store
    (``data/emc2/partA_reread.json``, :func:`experiments.run_stored`; networks trained by :mod:`tasks`' sweeps)."""
    from ..runs import sweeps
    from .runs import experiments as ex, tasks
    p = argparse.ArgumentParser(prog=f"{PROG} experiments", description=ex.__doc__.split("\n")[0])
    p.add_argument("--write", action="store_true", help=f"write {ex.stored_path().name}")
    p.add_argument("--chapters", nargs="+", default=list(ex.RUNNERS), choices=list(ex.RUNNERS))
    p.add_argument("--store", type=Path, help=f"the sweeps' records (default {tasks.store_for('cppn/x').parent})")
    sweeps.add_arguments(p)
    args = p.parse_args(argv)
    runners = tasks.stored_runners(args.store, progress=True, **sweeps.options(args))
    ex.run_stored(args.chapters, args.write, f"{PROG} experiments", log=print, runners=runners)
    if args.write:
        print(f"wrote {ex.stored_path()}")
    return 0


# -- fer and counting -------------------------------------------------------------------------------------------------
def fer(argv: Sequence[str]) -> int:
    """``fer``: PSNR of FER's SGD networks against the Picbreeder renders at 256 px."""
    from . import fer as f, picbreeder
    from ..book import images
    argparse.ArgumentParser(prog=f"{PROG} fer", description=f.__doc__.split("\n")[0]).parse_args(argv)
    for name in f.NAMES:
        m = f.load_fer(name)
        with torch.no_grad():
            img = m.render(256).double().numpy()
        info = f.fer_info(name)
        print(f"{name:9s} {info['arch']:42s} {info['n_params']:6d} params, PSNR "
              f"{images.psnr(img, picbreeder.reference_render(name)):.1f} dB at 256 px")
    return 0


def counting(argv: Sequence[str]) -> int:
    """``counting [--sample N --res R --seed S --kinds ...]``: every rule x policy x judge, stored."""
    from .audit import counting as c
    from . import picbreeder
    p = argparse.ArgumentParser(prog=f"{PROG} counting", description=c.__doc__.split("\n")[0])
    p.add_argument("--sample", type=int, default=150, help="weights per network and rule")
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", nargs="+", choices=c.KINDS, default=list(c.KINDS))
    p.add_argument("--out", default=None, help=f"JSON path (default data/{c.FILE})")
    p.add_argument("--cross-batch", action="store_true",
                   help=f"instead: choose the judge on one labelled batch, validate on the other (data/{c.CROSS_FILE})")
    args = p.parse_args(argv)
    if args.cross_batch:
        out = c.cross_batch(seed=args.seed)
        path = Path(args.out) if args.out else door.made_path(c.CROSS_FILE)
        results.write_json(path, out, f"{PROG} counting --cross-batch --seed {args.seed}")
        print(c.cross_batch_table(out).round(3).to_string())
        print(f"wrote {path} in {out['seconds']} s")
        return 0
    made_by = (f"{PROG} counting --sample {args.sample} --res {args.res} --seed {args.seed} --kinds "
               f"{' '.join(args.kinds)}" + (f" --out {args.out}" if args.out else ""))
    nets = c.default_networks(args.kinds, tuple(picbreeder.GENOMES))
    out = c.run(nets, res=args.res, sample=args.sample, seed=args.seed, progress=lambda s: print(s, flush=True))
    path = c.save(out, made_by, Path(args.out) if args.out else None)
    print(c.wide(out).to_string())
    print(f"wrote {path} in {out['seconds']} s")
    return 0


COMMANDS = {"twins": twins, "judges": judges, "semantic": semantic, "labelling": labelling, "reread": reread,
            "experiments": experiments, "fer": fer, "counting": counting}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default ``sys.argv[1:]``): one of :data:`COMMANDS`."""
    return dispatch(COMMANDS, PROG, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
