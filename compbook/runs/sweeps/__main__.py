"""``python -m compbook.runs.sweeps toys [--n N --sleep S --log FILE --gate DIR] --store DIR [--backend ray --address
ADDR]``: the toy sweep (:mod:`compbook.runs.sweeps.toys`) from the command line, as a cluster test's driver or a first
try of a cluster (each part's own sweeps: ``python -m compbook.cppn experiments``, ``python -m compbook.binding sweep``,
``python -m compbook.sae study``). Prints one JSON line: configs run, found stored, failed, seconds."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from ...cli import dispatch
from . import cli, runner, toys

PROG = "python -m compbook.runs.sweeps"


def toys_command(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} toys", description="Run the toy sweep (tiny least-squares models).")
    p.add_argument("--store", required=True, help="the folder of its records")
    p.add_argument("--n", type=int, default=16, help="models (seeds 0..n-1)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--sleep", type=float, default=0.0, help="seconds each config sleeps (a longer training)")
    p.add_argument("--log", default=None, help="a file each execution appends its seed to")
    p.add_argument("--gate", default=None, help="a folder each execution takes a token file from before it fits "
                   "(while the folder exists; a test's way to hold executions)")
    p.add_argument("--unstacked", action="store_true", help="one model per task (no run_many)")
    cli.add_arguments(p)
    args = p.parse_args(argv)
    extra = {k: v for k, v in (("sleep", args.sleep), ("log", args.log), ("gate", args.gate)) if v}
    sweep = toys.toy_sweep(args.n, steps=args.steps, stacked=not args.unstacked, **extra)
    report = runner.run(sweep, args.store, progress=sys.stderr.isatty(), **cli.options(args))
    print(json.dumps({"ran": len(report.ran), "stored": len(report.stored), "failed": len(report.failed),
                      "tasks": report.tasks, "retried": report.retried, "seconds": round(report.seconds, 3)}))
    return 1 if report.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch({"toys": toys_command}, PROG, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
