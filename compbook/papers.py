"""A paper's figures, typed once: the record each part's ``paper`` module fills (chapters 1-16 quote from there).

``compbook.cppn.paper``, ``compbook.binding.paper`` hold one :class:`Figure` per number the papers report; a
chapter reads ``paper.figure(name)`` and says it is the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import checks


@dataclass(frozen=True)
class Figure:
    """One figure: its ``value``, its ``source`` (which paper, or the released code) and ``what`` it is (units)."""
    value: object
    source: str
    what: str


def lookup(figures: Mapping[str, Figure], name: str):
    """The value of ``figures[name]``; ``ValueError`` naming the known figures otherwise."""
    return figures[checks.choice(name, "name (a figure)", figures)].value
