"""Part C's command lines: ``python -m compbook.sae <command> [options]`` (what made ``data/sae/``).

* ``vlm [--retrain]``: train and store the book's tiny VLM and its text-only baseline (:mod:`compbook.sae.vlm`).

The library modules hold no argument parsing; ``python -m compbook.sae.vlm ...`` (the old spelling) still runs
``vlm`` for one release.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

import torch

from ..cli import dispatch

PROG = "python -m compbook.sae"


def vlm(argv: Sequence[str]) -> int:
    """``vlm [--retrain]``: the tiny VLM pair in ``data/sae/`` (loaded when a matching pair is stored)."""
    from .vlm import pretrained_vlm
    ap = argparse.ArgumentParser(prog=f"{PROG} vlm",
                                 description="Train and store the book's tiny VLM and text-only baseline.")
    ap.add_argument("--retrain", action="store_true", help="train even when data/sae/ holds a matching pair")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    print(json.dumps(pretrained_vlm(retrain=args.retrain)[2]["accuracy"], indent=1))
    return 0


COMMANDS = {"vlm": vlm}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default ``sys.argv[1:]``): one of :data:`COMMANDS`."""
    return dispatch(COMMANDS, PROG, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
