"""Part C's command lines: ``python -m compbook.sae <command> [options]`` (what made ``data/sae/``).

* ``vlm [--retrain]``: train and store the book's tiny VLM and its text-only baseline (:mod:`compbook.sae.vlm`);
* ``study [--reference]``: the k / lambda study of chapter 15 (:mod:`compbook.sae.studies.study`, ``data/sae/study/``);
  ``study --regions 4 8``: S2AE with object-scale region counts at k = 32 (``data/sae/study/regions/``);
* ``runs``: chapters 14 and 16's vanilla and S2AE SAEs per seed (``data/sae/runs/``);
* ``objregions``: tiny-VLM variants whose regions may follow objects (:mod:`compbook.sae.studies.objregions`);
* ``objsae``: vanilla and S2AE on those variants' activations (:mod:`compbook.sae.studies.objsae`,
  ``data/sae/objsae/``);
* ``full [--tiny]``: every SAE of chapters 15-16 and their tables at the mode's size, one command
  (``COMPBOOK_MODE=full``: the GPU reader's run, :mod:`compbook.sae.runs.full`).

``study``, ``objsae`` and ``full`` train their SAEs through the sweep runner (:mod:`compbook.sae.runs.tasks`) and take
its options: ``--backend local|ray --address ADDR --workers N --retries N --per-task N`` (:mod:`compbook.runs.sweeps`).
The library modules hold no argument parsing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from ..cli import dispatch

PROG = "python -m compbook.sae"


def vlm(argv: Sequence[str]) -> int:
    """``vlm [--retrain]``: the tiny VLM pair in ``data/sae/`` (loaded when a matching pair is stored)."""
    from .vlm import pretrained_vlm
    ap = argparse.ArgumentParser(prog=f"{PROG} vlm",
                                 description="Train and store the book's tiny VLM and text-only baseline.")
    ap.add_argument("--retrain", action="store_true", help="train even when data/sae/ holds a matching pair")
    args = ap.parse_args(argv)
    print(json.dumps(pretrained_vlm(retrain=args.retrain)[2]["accuracy"], indent=1))
    return 0


def study(argv: Sequence[str]) -> int:
    """``study [--seeds N] [--retrain] [--reference] [--regions N ...] [--backend local|ray ...]``: the k / lambda
    study (chapter 15, ``data/sae/study/``), or with ``--regions`` the region-count S2AEs
    (``data/sae/study/regions/``); the SAEs train through the sweep runner (:mod:`compbook.runs.sweeps`' options)."""
    from ..runs import sweeps
    from .studies import study as st
    p = argparse.ArgumentParser(prog=f"{PROG} study", description=st.__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=None,
                   help=f"default {len(st.SEEDS)} ({len(st.REGION_SEEDS)} with --regions)")
    p.add_argument("--retrain", action="store_true")
    p.add_argument("--reference", action="store_true",
                   help="also the reference optimiser (compbook.sae.studies.refopt) at the chosen k")
    p.add_argument("--regions", type=int, nargs="+", metavar="N",
                   help="instead: S2AE with N regions per image at k = 32, lambda = 0.01 (data/sae/study/regions/)")
    sweeps.add_arguments(p)
    a = p.parse_args(argv)
    options = sweeps.options(a)
    if a.regions:
        st.run_regions(a.regions, a.seeds, retrain=a.retrain, **options)
    else:
        st.run(a.seeds, a.retrain, a.reference, **options)
    return 0


def runs(argv: Sequence[str]) -> int:
    """``runs [--retrain]``: chapters 14 and 16's first setting (``PartCRun.setting()``), vanilla and S2AE per
    seed, stored in ``data/sae/runs/`` (:func:`compbook.sae.experiment.stored_runs`)."""
    from . import experiment as ex
    from .s2ae import LAMBDA
    from .sizes import PartCRun
    p = argparse.ArgumentParser(prog=f"{PROG} runs",
                                description="Train (or load) chapter 16's vanilla and S2AE SAEs (data/sae/runs/).")
    p.add_argument("--retrain", action="store_true", help="train even when data/sae/runs/ holds them")
    a = p.parse_args(argv)
    sz = PartCRun.for_mode()
    s = ex.load_setting(sz.n_train, sz.n_test, sz.layer)
    got = ex.stored_runs(s.train, sz.setting(), tuple(range(sz.setting_seeds)), (0.0, LAMBDA), retrain=a.retrain)
    print(f"{len(got)} SAEs ({sz.setting()}); {sum(r['train s'] for r in got):.0f} s of training when trained")
    return 0


def objregions(argv: Sequence[str]) -> int:
    """``objregions [--retrain]``: the object-VLM variants (``data/sae/objvlm/``) and their region table."""
    import time

    import pandas as pd

    from .studies.objregions import region_table
    p = argparse.ArgumentParser(prog=f"{PROG} objregions",
                                description="Train and store the object-VLM variants; print the region table.")
    p.add_argument("--retrain", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    table = region_table(retrain=a.retrain)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.round(3))
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


def objsae(argv: Sequence[str]) -> int:
    """``objsae [--layouts L ...] [--variants V ...] [--regions N ...] [--seeds N] [--retrain] [--backend ...]``:
    SAEs on the object-VLM variants (``data/sae/objsae/``, through the sweep runner) and their table."""
    from ..runs import sweeps
    from .studies import objsae as os_
    from .studies.objregions import OBJECT_VLM_LAYOUTS, VARIANTS
    p = argparse.ArgumentParser(prog=f"{PROG} objsae", description=os_.__doc__.split("\n")[0])
    p.add_argument("--layouts", nargs="+", choices=OBJECT_VLM_LAYOUTS, default=["grid2"])
    p.add_argument("--variants", nargs="+", type=int, metavar="I", default=None,
                   help=f"indices into {list(VARIANTS)} (default: all)")
    p.add_argument("--regions", type=int, nargs="*", metavar="N", default=[4, 8],
                   help="object-scale region counts besides the paper's 20 (none: only 20)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--retrain", action="store_true")
    sweeps.add_arguments(p)
    a = p.parse_args(argv)
    options = sweeps.options(a)
    names = list(VARIANTS)
    variants = tuple(names[i] for i in a.variants) if a.variants is not None else tuple(names)
    os_.run(tuple(a.layouts), tuple(a.regions), a.seeds, a.retrain, variants, **options)
    return 0


def full(argv: Sequence[str]) -> int:
    """``full [--tiny] [--retrain] [--backend local|ray ...]``: :func:`compbook.sae.runs.full.run` at the mode's size
    (``COMPBOOK_MODE=full``: the paper-scale miniature, on a GPU where there is one) or at
    :data:`compbook.sae.sizes.TINY`; the SAEs train through the sweep runner (:mod:`compbook.runs.sweeps`' options)."""
    from ..runs import sweeps
    from .runs import full as fu
    from .sizes import TINY, PartCRun
    p = argparse.ArgumentParser(prog=f"{PROG} full", description=fu.__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="the toy size (seconds on a CPU; data/sae/tiny/)")
    p.add_argument("--retrain", action="store_true")
    sweeps.add_arguments(p)
    a = p.parse_args(argv)
    options = sweeps.options(a)
    cfg = TINY if a.tiny else PartCRun.for_mode()
    print(cfg)
    fu.show(fu.run(cfg, retrain=a.retrain, **options))
    return 0


COMMANDS = {"vlm": vlm, "study": study, "runs": runs, "objregions": objregions, "objsae": objsae, "full": full}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default ``sys.argv[1:]``): one of :data:`COMMANDS`."""
    return dispatch(COMMANDS, PROG, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
