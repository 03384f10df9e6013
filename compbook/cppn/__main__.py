"""Part A's command lines: ``python -m compbook.cppn <command> [options]`` (what made ``data/emc2/``,
``data/judge_cache/`` and ``data/semantic/``).

Commands (``python -m compbook.cppn <command> --help`` for each one's options):

* ``twins``: train SGD twins of the Picbreeder targets (:mod:`compbook.cppn.twins`), or ``--report``;
* ``judges fill|show``: fill or summarise a judge cache (:mod:`compbook.cppn.judges.cache`);
* ``semantic train|choose|validate``: the concept CNN's weights; choose the default CPU judge on held-out human
  verdicts; validate the choice on a later batch (:mod:`compbook.cppn.agreement`);
* ``labelling sheets|relabel|overlap|agreement|store``: blind human verdicts (:mod:`compbook.cppn.labelling`);
* ``reread``: Picbreeder against SGD under every judge (:mod:`compbook.cppn.reread`);
* ``experiments``: chapters 6-9's protocols, stored (:mod:`compbook.cppn.experiments`);
* ``fer``: FER's SGD networks against the Picbreeder renders (:mod:`compbook.cppn.fer`);
* ``counting``: the score under every counting rule, delta policy and judge (:mod:`compbook.cppn.counting`).

The library modules hold no argument parsing: each command below reads its options and calls them. The old
spellings (``python -m compbook.cppn twins ...``) still run these for one release (:mod:`compbook._compat`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

from .. import results
from ..cli import dispatch

PROG = "python -m compbook.cppn"


# -- twins ------------------------------------------------------------------------------------------------------------
def twins(argv: Sequence[str]) -> int:
    """``twins --target T [--steps N --res R --seeds ...]`` or ``twins --report``."""
    from . import store, twins as tw
    p = argparse.ArgumentParser(prog=f"{PROG} twins", description=tw.__doc__.split("\n")[0])
    p.add_argument("--target", choices=tw.TARGETS, action="append", default=[])
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--lr", type=float, default=None, help="default: FER's (3e-3, apple 3e-4)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-minutes", type=float, default=None, help="stop after this wall time (steps recorded)")
    p.add_argument("--no-plateau-stop", action="store_true", help="run all --steps even after a plateau")
    p.add_argument("--last-weights", action="store_true", help="store the last weights, not the lowest-loss ones")
    p.add_argument("--out", default=None, help="folder holding emc2/ (default: data/)")
    p.add_argument("--report", action="store_true", help="print MSE / PSNR of the stored twins")
    p.add_argument("--arch", choices=["picbreeder", "fer"], default="picbreeder",
                   help="fer: FER's activation mix per layer, our minibatch + cosine recipe (issue 24)")
    p.add_argument("--minibatch-steps", type=int, default=6000, help="--arch fer: random-pixel steps")
    p.add_argument("--full-steps", type=int, default=400, help="--arch fer: full-batch cosine steps")
    p.add_argument("--straight-through", action="store_true", help="--arch fer: straight-through clips")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.arch == "fer":
        return _fer_twins(args)
    for t in args.target:
        recipe = tw.TwinRecipe(t, args.res, args.steps, args.lr, args.seeds,
                               stop_at_plateau=not args.no_plateau_stop, max_minutes=args.max_minutes,
                               keep_best=not args.last_weights)
        t0 = time.perf_counter()
        models, losses, seconds = tw.train_twins(recipe, progress=sys.stderr.isatty())
        for w in tw.save_twins(recipe, models, losses, seconds, args.out):
            m = store.load_metadata(w)
            print(f"{w.name}: MSE {m['mse_64']:.5f} (64 px), PSNR {m['psnr_64']:.1f} dB (64), "
                  f"{m['psnr_256']:.1f} dB (256; FER {tw.FER_PSNR_256[t]})", flush=True)
        print(f"{t}: {recipe.steps} steps ({recipe.stopped_by}), {seconds:.0f} s training, "
              f"{time.perf_counter() - t0:.0f} s in all", flush=True)
    if args.report or not args.target:
        for r in tw.report(args.out):
            print(json.dumps(r))
    return 0


# -- judges -----------------------------------------------------------------------------------------------------------
def _judges_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{PROG} judges",
                                description="Fill or inspect EMC2 judge caches (data/judge_cache/).")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fill", help="ask a judge about every perturbation compositional_score evaluates; store it")
    f.add_argument("--genome", action="append", default=[], help="a Picbreeder genome (skull, butterfly, apple)")
    f.add_argument("--checkpoint", action="append", default=[], help="a compbook checkpoint (save_cppn)")
    f.add_argument("--concept", help="what the images show (default: the genome's name; required for checkpoints)")
    f.add_argument("--judge", choices=("vlm", "ssim"), default="vlm")
    f.add_argument("--cache", help="cache file or folder (default: data/judge_cache/)")
    g = f.add_argument_group("VLM judge")
    g.add_argument("--model-id", default=None, help="default Qwen/Qwen3-VL-4B-Thinking")
    g.add_argument("--revision", default=None, help="a commit hash pins the weights (default: main)")
    g.add_argument("--prompt", default=None, help="with {concept}; default compbook.cppn.judges.vlm.DEFAULT_PROMPT")
    g.add_argument("--max-new-tokens", type=int, default=None)
    g.add_argument("--image-size", type=int, default=None)
    g.add_argument("--batch-size", type=int, default=8, help="images per generate call")
    g.add_argument("--device", default=None)
    g.add_argument("--device-map", default=None, help="e.g. auto (needs accelerate)")
    s = f.add_argument_group("SSIM judge")
    s.add_argument("--threshold", type=float, default=0.5)
    e = f.add_argument_group("compositional_score (defaults: compbook.cppn.emc2's)")
    e.add_argument("--delta", type=float)
    e.add_argument("--res", type=int)
    e.add_argument("--policy")
    e.add_argument("--seed", type=int)
    e.add_argument("--engine")
    e.add_argument("--engine-batch-size", type=int, help="compositional_score's batch_size")
    e.add_argument("--sample", type=int, help="score a seeded sample of this many weights (default: all)")
    sh = sub.add_parser("show", help="summarise cache files")
    sh.add_argument("paths", nargs="*", help="cache files or folders (default: data/judge_cache/)")
    return p


def _make_judge(args):
    from .judges.base import SSIMJudge
    if args.judge == "ssim":
        return SSIMJudge(threshold=args.threshold)
    from .judges import vlm
    options = {k: v for k, v in (("model_id", args.model_id), ("prompt", args.prompt),
                                  ("max_new_tokens", args.max_new_tokens), ("image_size", args.image_size))
               if v is not None}
    return vlm.VLMJudge(revision=args.revision, batch_size=args.batch_size, device=args.device,
                        device_map=args.device_map, **options)


def _models(args) -> list[tuple[str, object, str]]:
    """``(name, CPPN, concept)`` for every ``--genome`` and ``--checkpoint``."""
    from . import picbreeder, store
    if not args.genome and not args.checkpoint:
        raise SystemExit("fill: give at least one --genome or --checkpoint")
    if args.checkpoint and not args.concept:
        raise SystemExit("fill: --concept is required with --checkpoint")
    out = [(g, picbreeder.layerize(picbreeder.load_genome(g)), args.concept or g) for g in args.genome]
    return out + [(c, store.load_cppn(c), args.concept) for c in args.checkpoint]


def _fill(args) -> int:
    """``fill``: run ``compositional_score`` with a ``CachedJudge(mode="fill")`` for each model."""
    from . import emc2
    from .judges.cache import CachedJudge, cache_path
    models = _models(args)
    judge = _make_judge(args)
    cached = CachedJudge(args.cache if args.cache else cache_path(judge.identity), judge, mode="fill")
    kwargs = {k: v for k, v in (("delta", args.delta), ("res", args.res), ("policy", args.policy),
                                ("seed", args.seed), ("engine", args.engine),
                                ("batch_size", args.engine_batch_size), ("sample", args.sample)) if v is not None}
    print(f"judge: {judge.identity}\ncache: {cached.path} ({len(cached)} entries)")
    for name, model, concept in models:
        before = (cached.hits, cached.misses)
        result = emc2.compositional_score(model, cached, concept, progress=True, **kwargs)
        print(f"{name} ({concept}): score {result.score:.3f} over {len(result.verdicts)} weights; "
              f"{cached.hits - before[0]} stored, {cached.misses - before[1]} new verdicts")
    unparsed = getattr(judge, "unparsed", [])
    if unparsed:
        print(f"warning: {len(unparsed)} answers could not be parsed and count as not preserved "
              f"(raise --max-new-tokens?); last: {unparsed[-1]['text'][-200:]!r}")
    print(f"wrote {cached.path} ({len(cached)} entries)")
    return 0


def _is_cache_file(path: Path) -> bool:
    """Whether ``path`` holds a judge cache (a JSON object with a judge-cache ``format``); the folder also holds
    other JSON files (the human keys, self-agreement records), which are not caches."""
    from .judges.cache import CACHE_FORMAT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return True                   # unreadable: read_cache says what is wrong with it
    return isinstance(data, dict) and str(data.get("format", "")).startswith(CACHE_FORMAT.split("/")[0])


def _show(args) -> int:
    """``show``: identity, entry count and fraction preserved per concept of each cache file. In a folder, JSON
    files that are not caches are listed as skipped; a file named on the command line must be a cache (exit
    status 2 otherwise). A damaged cache (edited, truncated) stops the command with its ``ValueError``."""
    from .judges.cache import cache_folder, read_cache
    paths = [Path(p) for p in args.paths] or [cache_folder()]
    files, skipped = [], []
    for p in paths:
        for f in (sorted(p.glob("*.json")) if p.is_dir() else [p]):
            (files if _is_cache_file(f) else skipped).append((f, p.is_dir()))
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
    """``judges fill ...`` / ``judges show ...``."""
    args = _judges_parser().parse_args(argv)
    return {"fill": _fill, "show": _show}[args.command](args)


# -- semantic judges and their choice ---------------------------------------------------------------------------------
def _print_tables(tables: dict) -> None:
    for name, rows in tables.items():
        for r in rows:
            print(f"{name:24s} {r.get('split', ''):8s} {r['network']:10s} n={r['n']:3d} agree "
                  f"{r['agreement']:.3f} bal.acc {r['balanced_accuracy']:.3f} kappa {r['kappa']:.3f}")


def _choose() -> int:
    """Load the key and the human verdicts, run :func:`agreement.choose`, write ``data/semantic/choice.json``."""
    from . import agreement, labelling
    from .judges import semantic
    torch.set_num_threads(1)
    key, answers = agreement.answered_items("human_key.json")
    result = agreement.choose(key, answers, labelling.render_items(key))
    path = results.write_json(semantic.choice_path(), result)
    _print_tables(result["tables"])
    print(f"thresholds {result['thresholds']}; chosen: {result['chosen']}")
    return 0


def _validate(key_name: str) -> int:
    """:func:`agreement.validate` on a later labelled batch (its key in ``data/judge_cache/``) with the thresholds
    of ``data/semantic/choice.json``; writes ``data/semantic/validation_<batch>.json``."""
    from . import agreement, labelling
    from .judges import semantic
    torch.set_num_threads(1)
    key, answers = agreement.answered_items(key_name)
    choice = semantic.read_choice()
    result = agreement.validate(key, answers, labelling.render_items(key), choice["thresholds"])
    result["key"] = key_name
    out = semantic.choice_path().parent / f"validation_{Path(key_name).stem.removeprefix('human_key_')}.json"
    results.write_json(out, result)
    _print_tables(result["tables"])
    print(f"wrote {out}")
    return 0


def _stored_answers(key_name: str, labeller: str) -> tuple[str, list, list]:
    """``(identity, items, answers)``: ``labeller``'s stored verdicts on the items of ``key_name``."""
    from . import agreement, labelling
    identity = labelling.human_identity(labeller)
    items, answers = agreement.answered([key_name], identity)
    if not items:
        raise SystemExit(f"no answers of {labeller!r} stored for {key_name} (run labelling store --labeller first)")
    return identity, items, answers


def _second_labeller(key_name: str, labeller: str, first_keys: Sequence[str], seed: int) -> int:
    """The default judge at its fixed threshold against another labeller's verdicts on ``key_name``, their
    verdicts per network kind and delta, and the choice made on one labeller validated on the other
    (:func:`agreement.cross_labeller`); writes ``data/semantic/validation_<batch>.json``."""
    from . import agreement, labelling
    from .judges import semantic as sem
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    identity, items, answers = _stored_answers(key_name, labeller)
    first_items, first_answers = agreement.answered(first_keys)
    images, first_images = labelling.render_items(items), labelling.render_items(first_items)
    choice = sem.read_choice()
    fixed = {k: t for k, t in choice["thresholds"].items()} | {"ssim": 0.5}
    scores = {k: agreement.judge_scores(k, images, items) for k in (*fixed, *agreement.VARIANTS)}
    per_item = [{"item": it["item"], "concept": it["concept"], "kind": it["kind"], "delta": it["question"]["delta"],
                 "answer": a} | {k: round(float(v[j]), 4) for k, v in scores.items()}
                for j, (it, a) in enumerate(zip(items, answers))]
    out = {"made_by": (f"{PROG} semantic second --key {key_name} --labeller '{labeller}' --first-keys "
                       f"{' '.join(first_keys)} --seed {seed}"),
           "key": key_name, "identity": identity, "first_keys": list(first_keys),
           "default": {"kind": choice["chosen"], "threshold": choice["thresholds"][choice["chosen"]]},
           "fixed": {k: {"threshold": t, "rows": agreement.labeller_rows(items, answers, scores[k] >= t, seed)}
                     for k, t in fixed.items()},
           "items": per_item,
           "human": {"kind_delta": agreement.human_rows(items, answers),
                     "concept_kind_delta": agreement.human_rows(items, answers, ("concept", "kind", "delta")),
                     "first_kind_delta": agreement.human_rows(first_items, first_answers)},
           "cross": agreement.cross_labeller((first_items, first_answers, first_images),
                                             (items, answers, images), seed=seed,
                                             names=("labeller 1", "labeller 2"))}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    path = sem.choice_path().parent / f"validation_{Path(key_name).stem.removeprefix('human_key_')}.json"
    results.write_json(path, out)
    for k, v in out["fixed"].items():
        for r in v["rows"]:
            print(f"{k:10s} {r['network']:10s} n={r['n']:3d} can't tell {r['cant_tell']:2d} agree "
                  f"{r['agreement']:.3f} bal.acc {r['balanced_accuracy']:.3f} kappa {r['kappa']:.3f}")
    for d in out["cross"]["directions"]:
        print(f"chosen on {d['chosen_on']}: {d['chosen']} {d['thresholds']}")
    print(f"wrote {path} in {out['seconds']} s")
    return 0


def _overlap_semantic(key_name: str, labeller: str) -> int:
    """The overlap set (issue 24): ``labeller`` against each earlier labeller on that labeller's items
    (:func:`agreement.pairwise`), their yes rates, ``labeller``'s yes rate reweighted to each earlier batch
    (:func:`agreement.reweighted_yes`), and the default judge at its fixed threshold against ``labeller``;
    writes ``data/semantic/overlap.json``."""
    from collections import Counter
    from . import agreement, labelling
    from .judges import semantic as sem
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    identity, items, third = _stored_answers(key_name, labeller)
    choice = sem.read_choice()
    kind, t = choice["chosen"], choice["thresholds"][choice["chosen"]]
    judge = agreement.judge_scores(kind, labelling.render_items(items), items)
    out = {"made_by": f"{PROG} semantic overlap --key {key_name} --labeller '{labeller}'", "key": key_name,
           "identity": identity, "default": {"kind": kind, "threshold": t}, "groups": [], "items": []}
    for keys, who, _ in OVERLAP:
        idx = [j for j, it in enumerate(items) if it["labeller"] == who]
        sub = [items[j] for j in idx]
        orig = labelling.answers_for(sub, identity=labelling.human_identity(who))
        thr = [third[j] for j in idx]
        verdict = ["yes" if judge[j] >= t else "no" for j in idx]
        batch = Counter(agreement.answered(list(keys), labelling.human_identity(who))[1])
        out["groups"].append({
            "labeller": who, "batches": list(keys), "n": len(idx), "batch_counts": dict(batch),
            "labellers": agreement.pairwise(orig, thr),
            "third_yes_reweighted": agreement.reweighted_yes(orig, thr, batch),
            "original_yes_batch": batch["yes"] / sum(batch.values()),
            "judge_vs_third": agreement.pairwise(verdict, thr),
            "judge_vs_original": agreement.pairwise(verdict, orig)})
        out["items"] += [{"item": items[j]["item"], "concept": items[j]["concept"], "kind": items[j]["kind"],
                          "labeller": who, "of": items[j]["of"], "original": o, "third": third[j],
                          "judge_score": round(float(judge[j]), 4)} for j, o in zip(idx, orig)]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    path = results.write_json(sem.choice_path().parent / "overlap.json", out)
    for g in out["groups"]:
        p = g["labellers"]
        print(f"{g['labeller']:16s} n={g['n']} exact {p['exact']:.2f} yes/no {p['agreement_yes_no']:.2f} "
              f"kappa {p['kappa_yes_no']:.2f} yes {p['first']['yes_rate']:.2f} vs {p['second']['yes_rate']:.2f}")
    print(f"wrote {path} in {out['seconds']} s")
    return 0


def semantic(argv: Sequence[str]) -> int:
    """``semantic train`` (the CNN's weights), ``semantic choose``, ``validate``, ``second`` or ``overlap``."""
    p = argparse.ArgumentParser(prog=f"{PROG} semantic")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train the concept CNN on augmentations of the reference renders")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch", type=int, default=96)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1)
    sub.add_parser("choose", help="thresholds on the calibration half, the default on the held-out half")
    v = sub.add_parser("validate", help="the chosen thresholds on a later labelled batch (not in the choice)")
    v.add_argument("--key", default="human_key_batch2.json", help="its key, in data/judge_cache/")
    w = sub.add_parser("second", help="the default judge and the choice against another labeller's verdicts")
    w.add_argument("--key", default="human_key_batch3.json", help="its key, in data/judge_cache/")
    w.add_argument("--labeller", default="second labeller", help="the labeller whose verdicts are stored")
    w.add_argument("--first-keys", nargs="+", default=["human_key.json", "human_key_batch2.json"],
                   help="the first labeller's keys (the cross-labeller choice)")
    w.add_argument("--seed", type=int, default=0)
    o = sub.add_parser("overlap", help="a third labeller on items labellers 1 and 2 answered (overlap set)")
    o.add_argument("--key", default="human_key_overlap.json", help="its key, in data/judge_cache/")
    o.add_argument("--labeller", default="third labeller", help="the labeller whose verdicts are stored")
    args = p.parse_args(argv)
    if args.command == "choose":
        return _choose()
    if args.command == "overlap":
        return _overlap_semantic(args.key, args.labeller)
    if args.command == "second":
        return _second_labeller(args.key, args.labeller, args.first_keys, args.seed)
    if args.command == "validate":
        return _validate(args.key)
    from .. import checkpoints
    from .judges import augment, semantic as sem
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    net, curve = sem.train_classifier(args.steps, args.batch, seed=args.seed, progress=sys.stderr.isatty())
    path = sem.weights_path()
    meta = {"made_by": f"{PROG} semantic train --steps {args.steps} --batch {args.batch} --seed {args.seed}",
            "seconds": round(time.perf_counter() - t0, 1), "loss_every_100": curve,
            "augmentations": augment.DECLARED}
    checkpoints.save(path, net.state_dict(), meta, format=sem.WEIGHTS_FORMAT)
    print(f"wrote {path} ({meta['seconds']} s); last losses {curve[-3:]}")
    return 0


# -- labelling --------------------------------------------------------------------------------------------------------
def labelling(argv: Sequence[str]) -> int:
    """``labelling sheets|relabel|store ...`` (see ``data/judge_cache/README.md``)."""
    from . import labelling as lab, twins as tw
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
    t = sub.add_parser("store", help="write labels (lines '<item> y|n|?') into the human-verdict cache")
    t.add_argument("--key", nargs="+", required=True)
    t.add_argument("--labels", nargs="+", required=True)
    t.add_argument("--labeller", default=lab.LABELLER, help="whose answers (their own cache file)")
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
        from .agreement import self_agreement
        out = self_agreement(lab.read_key(args.relabel_key), lab.read_labels(args.first), lab.read_labels(args.second))
        print(f"wrote {results.write_json(args.out, out | {'note': args.note})}: {out}")
    else:
        items = [it for k in args.key for it in lab.read_key(k)]
        labels = {}
        for f in args.labels:
            labels |= lab.read_labels(f)
        identity = lab.human_identity(args.labeller)
        print(f"wrote {lab.store_verdicts(items, labels, identity=identity)} ({len(labels)} labels)")
    return 0


#: the overlap draw (issue 24): per labeller, its keys and how many items of each answer
OVERLAP = ((("human_key.json", "human_key_batch2.json"), "book authors", {"yes": 14, "no": 13, "can't tell": 13}),
           (("human_key_batch3.json",), "second labeller", {"no": 12, "yes": 28}))
OVERLAP_STARTS = {"skull": 20000, "butterfly": 21000, "apple": 22000}


def _overlap(out_key: str, out: str, seed: int) -> None:
    """Items labellers 1 and 2 answered (:data:`OVERLAP`, ``labelling.stratified_draw``), shuffled per
    concept and numbered from :data:`OVERLAP_STARTS`: the key (``of``, ``batch``, ``labeller``) and sheets."""
    from . import agreement, labelling as lab
    torch.set_num_threads(1)
    items = []
    for j, (keys, who, counts) in enumerate(OVERLAP):
        got, answers = [], []
        for k in keys:
            its, ans = agreement.answered([k], lab.human_identity(who))
            got += [it | {"batch": k, "labeller": who} for it in its]
            answers += ans
        items += [{f: v for f, v in it.items() if f != "answer"}
                  for it in lab.stratified_draw(got, answers, counts, seed + j)]
    items = lab.number_by_concept(items, OVERLAP_STARTS, seed + len(OVERLAP))
    lab.write_key(out_key, items, f"overlap key (issue 24): 'of' is the original item of 'batch', answered "
                  f"by 'labeller'; {PROG} labelling overlap --seed {seed}")
    sheets = lab.write_sheets(items, lab.render_items(items), out)
    print(f"{len(items)} items, {len(sheets)} sheets in {out}; key {out_key}")


# -- reread -----------------------------------------------------------------------------------------------------------
def _write_reread(out: dict) -> None:
    from ..paths import data_dir
    path = results.write_json(data_dir() / "emc2" / "reread.json", out, indent=0)
    for r in out["rows"]:
        print(f"{r['concept']:9s} {r['network']:10s} {r['judge']:24s} d={r['delta']:<4} {r['score']:.3f} "
              f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] n={r['n']}")
    print(f"wrote {path} in {out['seconds']} s")


def reread(argv: Sequence[str]) -> int:
    """``reread [--sample N --pb-sample N --deltas ...]``, ``--concepts`` parts, ``--merge`` parts."""
    from . import reread as rr, twins as tw
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
    torch.set_num_threads(1)
    made_by = (f"{PROG} reread --sample {args.sample} --pb-sample {args.pb_sample} --deltas "
               f"{' '.join(map(str, args.deltas))}")
    out = rr.run(args.sample, args.pb_sample, tuple(args.deltas), args.concepts, made_by)
    if args.concepts:
        from ..paths import data_dir
        part = data_dir() / "emc2" / f"reread_part_{'_'.join(out['concepts'])}.json"
        results.write_json(part, out, indent=0)
        print(f"wrote {part} in {out['seconds']} s; merge the parts with --merge")
        return 0
    _write_reread(out)
    return 0


# -- experiments ------------------------------------------------------------------------------------------------------
def experiments(argv: Sequence[str]) -> int:
    """``experiments --write [--chapters 6 7 8 9 theory 6fer 7fer 8fer]``: run and store
    (``data/emc2/partA_reread.json``)."""
    from .. import checks
    from . import experiments as ex
    p = argparse.ArgumentParser(prog=f"{PROG} experiments")
    p.add_argument("--write", action="store_true", help=f"write {ex.stored_path().name}")
    p.add_argument("--chapters", nargs="+", default=list(ex.RUNNERS), choices=list(ex.RUNNERS))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    path = ex.stored_path()
    data = checks.json_file(path, "stored Part A results") if path.is_file() else {}
    for ch in args.chapters:
        t0 = time.perf_counter()
        out = ex.RUNNERS[ch](**ex.STORED[ch])
        out |= {"made_by": f"{PROG} experiments --write --chapters {ch}", "sample": ex.STORED[ch]["sample"],
                "seconds": round(time.perf_counter() - t0, 1)}
        data[ch if ch == "theory" else f"chapter{ch}"] = out
        print(f"chapter {ch}: {out['seconds']} s")
        if args.write:
            results.write_json(path, data, f"{PROG} experiments --write", indent=0, default=float)
    if args.write:
        print(f"wrote {path}")
    return 0


def _fer_twins(args) -> int:
    """``twins --arch fer``: one resumable run per target and seed (checkpoint ``<out>/emc2/fertwin_*.pt``)."""
    from . import twins as tw
    from ..paths import data_dir
    folder = Path(args.out) if args.out else data_dir()
    for t in args.target:
        for seed in args.seeds:
            recipe = tw.FerTwinRecipe(t, seed, minibatch_steps=args.minibatch_steps, full_steps=args.full_steps,
                                      lr=args.lr, straight_through=args.straight_through)
            ckpt = Path("/tmp") / f"fertwin_{t}_seed{seed}_ckpt.pt" if args.out is None \
                else folder / f"{tw.fer_twin_stem(recipe)}.pt"
            model, info = tw.train_fer_twin(recipe, ckpt, max_minutes=args.max_minutes,
                                            log=lambda s: print(s, flush=True))
            if not info["done"]:
                print(f"{t} seed {seed}: stopped at step {info['steps']} (time); rerun to resume from {ckpt}")
                continue
            path = tw.save_fer_twin(recipe, model, info, folder)
            from . import store
            m = store.load_metadata(path)
            print(f"{path.name}: PSNR {m['psnr_256']:.1f} dB at 256 px, {m['train_seconds']:.0f} s", flush=True)
    return 0


# -- fer and counting (issue 24) --------------------------------------------------------------------------------------
def fer(argv: Sequence[str]) -> int:
    """``fer``: PSNR of FER's SGD networks against the Picbreeder renders at 256 px."""
    from . import fer as f, picbreeder
    from .. import images
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
    from . import counting as c, picbreeder
    p = argparse.ArgumentParser(prog=f"{PROG} counting", description=c.__doc__.split("\n")[0])
    p.add_argument("--sample", type=int, default=150, help="weights per network and rule")
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", nargs="+", choices=c.KINDS, default=list(c.KINDS))
    p.add_argument("--out", default=None, help=f"JSON path (default data/{c.FILE})")
    p.add_argument("--cross-batch", action="store_true",
                   help=f"instead: choose the judge on one human batch, validate on the other (data/{c.CROSS_FILE})")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.cross_batch:
        from ..paths import data_dir
        out = c.cross_batch(seed=args.seed)
        path = Path(args.out) if args.out else data_dir() / c.CROSS_FILE
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
