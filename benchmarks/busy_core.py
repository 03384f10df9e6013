"""Each chapter's time in a run beside a busy core, against its quiet time: no chapter should slow by more than
its share when the machine is busy (at most 3 times its quiet time on the 2-core CPU machine).

Inputs are JUnit-like reports of a run of the chapters (``make test`` writes ``_executed/colab.xml``, the
simulated Colab's run). The quiet times are the stored record (``data/runtimes.json``, written by ``make
runtimes`` from a quiet run) unless ``--quiet REPORT`` names a quiet run's report::

    python3 -c 'while True: pass' &      # the busy core
    make test                            # writes _executed/colab.xml
    kill %1
    python benchmarks/busy_core.py _executed/colab.xml

prints one line per chapter (busy s, quiet s, ratio) and exits 1 when a chapter is over ``--limit`` times its
quiet time. A chapter run in the simulated Colab also downloads its stored results from a local server and starts
a fresh kernel, which the checkout's quiet record may not include: the ratio is an upper bound on the slowdown.
"""

from __future__ import annotations

import argparse
import sys

from compbook.results import runtimes


def ratios(busy: dict, quiet: dict) -> list[tuple[str, float, float, float]]:
    """(chapter, busy s, quiet s, busy / quiet) for each chapter in both, in the quiet record's order."""
    missing = sorted(set(quiet) - set(busy))
    if missing:
        raise ValueError(f"busy run: no time for {', '.join(missing)} (did every chapter pass?)")
    return [(name, busy[name], q, busy[name] / q) for name, q in quiet.items()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", help="the busy run's JUnit report (make test: _executed/colab.xml)")
    p.add_argument("--quiet", default=None, help="a quiet run's report (default: the stored data/runtimes.json)")
    p.add_argument("--limit", type=float, default=3.0, help="the largest busy / quiet ratio allowed (default 3)")
    args = p.parse_args(argv)
    busy = runtimes.from_junit(args.report)
    quiet = runtimes.from_junit(args.quiet) if args.quiet else runtimes.load()["seconds"]
    rows = ratios(busy, quiet)
    print(f"{'chapter':30} {'busy s':>7} {'quiet s':>7} {'ratio':>6}")
    for name, b, q, r in rows:
        print(f"{name:30} {b:7.0f} {q:7.0f} {r:6.1f}{'  over' if r > args.limit else ''}")
    total_b, total_q = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'all chapters':30} {total_b:7.0f} {total_q:7.0f} {total_b / total_q:6.1f}")
    over = [r[0] for r in rows if r[3] > args.limit]
    if over:
        print(f"over {args.limit:g}x: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
