"""How a set of SAE training activations is made: the ``source`` a sweep's worker makes them again from
(:mod:`compbook.sae.runs.tasks`; chapters 15-16's activations, :func:`compbook.sae.experiment.load_setting`).

A source is a dict: ``{"source": "tiny-vlm", "n", "seed", "layer"}`` (the stored tiny VLM's residual stream after
block ``layer`` on ``make_scenes(n, seed)``), ``"object-vlm"`` (plus ``variant`` and ``layout``: a stored
object-VLM variant, :func:`compbook.sae.studies.objsae.setting`), ``"synthetic"`` (``n``, ``tokens``, ``d``, ``grid``,
``seed``: :func:`compbook.sae.runs.tasks.synthetic_data`) or ``"given"`` (handed over in this process: only it can
train on them). :func:`note_source` remembers, in this process, how an :class:`~compbook.sae.s2ae.SAEData` was
made; :func:`noted` finds it again by identity (a copy of the same numbers is not the same activations' note).
"""

from __future__ import annotations

import weakref

from .. import checks
from .s2ae import SAEData

#: The fields of each source (besides ``source``).
SOURCES = {"tiny-vlm": ("n", "seed", "layer"), "object-vlm": ("variant", "layout", "n", "seed", "layer"),
           "synthetic": ("n", "tokens", "d", "grid", "seed"), "given": ()}

_NOTES: dict = {}                  # id(data) -> (weak reference to data, source)


def check_source(source) -> dict:
    """``source`` if it is a dict naming one of :data:`SOURCES` with exactly that source's fields."""
    checks.mapping(source, "source")
    kind = checks.choice(source.get("source"), "source['source']", tuple(SOURCES))
    checks.fields(source, "source", ("source", *SOURCES[kind]), ("source", *SOURCES[kind]))
    return source


def note_source(data: SAEData, source: dict) -> SAEData:
    """Remember in this process that ``data`` was made from ``source``; returns ``data``."""
    checks.instance(data, "data", SAEData)
    check_source(source)
    for k in [k for k, (ref, _) in _NOTES.items() if ref() is None]:
        del _NOTES[k]
    _NOTES[id(data)] = (weakref.ref(data), dict(source))
    return data


def noted(data: SAEData) -> dict | None:
    """The source :func:`note_source` noted for this very ``data`` object, else None."""
    ref, source = _NOTES.get(id(data), (None, None))
    return dict(source) if ref is not None and ref() is data else None
