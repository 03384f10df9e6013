"""The registry's command line: ``python -m compbook.results check|refresh|add|stamp|show`` (``data/registry.json``).

* ``check``: every file of ``data/`` registered, with the registry's SHA-256, every artifact with a project
  command (exit 1 and a list of problems otherwise);
* ``refresh [PATH ...]``: re-register the files (all, or those at or under each PATH) after a command re-made
  them or a merge changed them: new digests, new files of a registered checkpoint or folder, missing files dropped;
* ``add PATH [--command CMD] [--note TEXT]``: register a new artifact (a file, a checkpoint stem or a folder;
  the command defaults to the ``made_by`` its JSON records);
* ``stamp PATH ... [--command CMD]``: give JSON files written without provenance (by older code, e.g. in a
  merged branch) their ``made_by`` (default: their old ``command`` key, else the registered command) and
  record them;
* ``show [NAME ...]``: each artifact's provenance line;
* ``runtimes REPORT [--measured DATE] [--where TEXT] [--intro PATH]``: the run-time record
  (``data/runtimes.json``, :mod:`compbook.results.runtimes`) from the JUnit-like report of ``make test``'s run of
  the chapters (``_executed/colab.xml``; ``make runtimes``), and the landing page's table rewritten from it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import paths
from . import provenance, read_registry
from .upkeep import add, check, refresh, stamp

PROG = "python -m compbook.results"


def _relative(folder: Path, p: str) -> str:
    """A PATH argument relative to the data folder (given relative to it, or as a path that exists)."""
    a = Path(os.path.abspath(p))
    if a.exists() or any(Path(str(a) + s).exists() for s in (".json", ".safetensors")):
        try:
            return a.relative_to(folder).as_posix()
        except ValueError:
            raise SystemExit(f"{p}: not inside the data folder {folder}") from None
    return p.removeprefix("data/")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``check``, ``refresh``, ``add`` or ``show`` on the data folder (:func:`compbook.results.paths.data_dir`)."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("check", help="every file registered with its digest; exit 1 otherwise")
    r = sub.add_parser("refresh", help="re-register changed, new or missing files")
    r.add_argument("paths", nargs="*", help="files or folders (default: all of data/)")
    a = sub.add_parser("add", help="register a new artifact (file, checkpoint stem or folder)")
    a.add_argument("path")
    a.add_argument("--command", default=None, help="the project command that makes it (default: its made_by)")
    a.add_argument("--note", default=None, help="what the command does not say (e.g. typed by a labeller)")
    t = sub.add_parser("stamp", help="give JSON files without provenance their made_by, and record them")
    t.add_argument("paths", nargs="+")
    t.add_argument("--command", default=None, help="the project command that made them (default: their 'command')")
    s = sub.add_parser("show", help="provenance lines")
    s.add_argument("names", nargs="*")
    u = sub.add_parser("runtimes", help="record the chapters' CPU run times from make test's JUnit report")
    u.add_argument("report", help="the JUnit-like report of the chapters' run (make test: _executed/colab.xml)")
    u.add_argument("--measured", default=None, help="the date, in words (default: today)")
    u.add_argument("--where", default="this project's 2-core CPU machine", help="the machine, in words")
    u.add_argument("--intro", default="intro.md", help="the landing page whose table is rewritten")
    args = p.parse_args(argv)
    folder = Path(os.path.abspath(paths.data_dir()))
    if args.action == "runtimes":
        import datetime

        from . import runtimes
        when = args.measured or f"{datetime.date.today():%-d %B %Y}"
        where = runtimes.where_in_words(args.where, runtimes.at_a_time(args.report))
        rec = runtimes.record(runtimes.from_junit(args.report), when, where)
        print(f"wrote {runtimes.write(rec, folder)}")
        book = Path(args.intro).resolve().parent
        changed = runtimes.write_intro(args.intro, runtimes.toc_titles(book), rec)
        print(f"{args.intro}: {'table rewritten' if changed else 'table already current'}")
        return 0
    if args.action == "check":
        problems = check(folder)
        print("\n".join(problems) or f"{folder / 'registry.json'}: every file registered, every digest matches")
        return 1 if problems else 0
    if args.action == "refresh":
        changes, unregistered = refresh(folder, [_relative(folder, t) for t in args.paths])
        print("\n".join(changes) or "nothing changed")
        for rel in unregistered:
            print(f"{rel}: belongs to no artifact; register it: {PROG} add {rel} --command '...'", file=sys.stderr)
        return 1 if unregistered else 0
    if args.action == "add":
        print(f"registered {add(folder, _relative(folder, args.path), args.command, args.note)}")
        return 0
    if args.action == "stamp":
        for p in args.paths:
            done = stamp(folder / _relative(folder, p), args.command)
            print(f"{p}: {'made_by added' if done else 'already has made_by'}")
        return 0
    reg = read_registry(folder)["artifacts"]
    for name in args.names or sorted(reg):
        if name not in reg:
            raise SystemExit(f"{name}: not a registered artifact")
        print(provenance(name, reg[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
