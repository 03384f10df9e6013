"""The options every part's sweep command takes: ``--backend local|ray --address ADDR --workers N --retries N``
(``python -m compbook.cppn experiments``, ``python -m compbook.binding sweep``, ``python -m compbook.sae study``
...)."""

from __future__ import annotations

import argparse

from .backends import BACKENDS


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the runner's options to ``parser`` (in their own group); returns it."""
    g = parser.add_argument_group("where the sweep runs (compbook.runs.sweeps)")
    g.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local: this machine (default); ray: a Ray cluster (pip install 'compbook[sweeps]')")
    g.add_argument("--address", default=None,
                   help="a running Ray cluster's address (ray start --head prints it); default: a local one")
    g.add_argument("--workers", type=int, default=None,
                   help="local: processes (default 1, in this process); ray without --address: the local "
                        "cluster's CPUs")
    g.add_argument("--retries", type=int, default=2, help="more runs of a failed task (default 2)")
    g.add_argument("--per-task", type=int, default=None,
                   help="configs stacked in one task (default: from the device's memory)")
    return parser


def options(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`compbook.runs.sweeps.run` from parsed options."""
    if args.address is not None and args.backend != "ray":
        raise SystemExit("--address is a Ray cluster's: give --backend ray with it")
    return {"backend": args.backend, "address": args.address, "workers": args.workers, "retries": args.retries,
            "per_task": args.per_task}
