"""compbook: the helper package of the compbook teaching book.

* shared pieces (top level): :mod:`~compbook.config` (CPU / full mode), :mod:`~compbook.results.paths`,
  :mod:`~compbook.checks` (argument checks), :mod:`~compbook.stats` (intervals and their formatting),
  :mod:`~compbook.results.checkpoints` (safetensors + JSON for every part), :mod:`~compbook.book.images`,
  :mod:`~compbook.book.plots`, :mod:`~compbook.book.sliders`, :mod:`~compbook.scenes` (scenes of Parts B and C),
  :mod:`~compbook.results` (the registry of stored results in ``data/``), :mod:`~compbook.runs.serving` (an
  OpenAI-compatible chat client) and :mod:`~compbook.results.journal` (atomic files and journals that survive a killed
  run);
* Part A, chapters 1-9 and their notes: :mod:`compbook.cppn` (CPPNs, training, EMC2-Bench and its judges, claims);
* Part B, chapters 10-13: :mod:`compbook.binding` (how embedding models bind concepts);
* Part C, chapters 14-16: :mod:`compbook.sae` (sparse autoencoders, vanilla and S2AE).

Each part's command lines: ``python -m compbook.cppn|binding|sae <command>``. Importing the package loads no part:
only :mod:`~compbook.config`, which sets torch's intra-op threads once (one thread unless ``COMPBOOK_THREADS``
or ``OMP_NUM_THREADS`` says otherwise: :func:`compbook.config.set_threads`). Names removed in a release are listed
in ``CHANGELOG.md``.
"""

#: the package's version, its one source (``pyproject.toml`` reads it: ``[tool.setuptools.dynamic]``)
__version__ = "0.3.0"

import os as _os

from .config import set_threads as _set_threads

_set_threads()                                # torch's threads, chosen once (compbook.config.threads)

if _os.environ.get("COMPBOOK_FIGCHECK"):      # a run that checks every figure it draws (compbook.book.legibility.watch)
    from .book.legibility import watch as _watch
    _watch()
