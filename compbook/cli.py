"""The one dispatcher behind ``python -m compbook.cppn|binding|sae <command>`` (each part's ``__main__.py``)."""

from __future__ import annotations

import sys
from typing import Callable, Mapping, Sequence


def dispatch(commands: Mapping[str, Callable[[list], int]], prog: str, doc: str,
             argv: Sequence[str] | None = None) -> int:
    """Run ``commands[argv[0]](argv[1:])`` (``argv`` defaults to ``sys.argv[1:]``); usage and exit code 2 when
    ``argv`` names no command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in commands:
        print(f"usage: {prog} {{{','.join(commands)}}} [options]\n\n{doc}", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])
