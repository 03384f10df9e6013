"""The one dispatcher behind ``python -m compbook.cppn|binding|sae <command>`` (each part's ``__main__.py``)."""

from __future__ import annotations

import sys
from typing import Callable, Mapping, Sequence


def dispatch(commands: Mapping[str, Callable[[list], int]], prog: str, doc: str,
             argv: Sequence[str] | None = None) -> int:
    """Run ``commands[argv[0]](argv[1:])`` (``argv`` defaults to ``sys.argv[1:]``). ``-h`` / ``--help``: the
    usage and ``doc`` on stdout, exit code 0; no command or an unknown one: the usage on stderr, exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = f"usage: {prog} {{{','.join(commands)}}} [options]\n\n{doc}"
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not argv or argv[0] not in commands:
        print(usage, file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])
