"""Sweeps of many small trainings, run once each, anywhere: this process, a pool of processes, a Ray cluster.

The papers' results are sweeps: Part A's depths x seeds x targets of CPPNs, Part B's coverages x seeds of
controlled models (the paper's some 500), Part C's k x lambda x seeds of SAEs. Each part builds its sweeps
(:mod:`compbook.cppn.runs.tasks`, :mod:`compbook.cppn.runs.scoring_tasks`, :mod:`compbook.binding.runs.tasks`,
:mod:`compbook.sae.runs.tasks`) and runs them here::

    sweep = sweeps.Sweep("binding/coverage", configs, run_many=train_stack, group=shape_of, model_bytes=bytes_of)
    report = sweeps.run(sweep, store, backend="ray", address="10.0.0.1:6379")
    report.check().records          # {key: record}, every config's

* :mod:`~compbook.runs.sweeps.spec`: :class:`Sweep`, each config's key (:func:`config_key`), tasks (stacks);
* :mod:`~compbook.runs.sweeps.store`: one record per config, stored atomically (a folder artifact in ``data/``);
* :mod:`~compbook.runs.sweeps.backends`: ``local`` (in process or a process pool) and ``ray``;
* :mod:`~compbook.runs.sweeps.runner`: :func:`run`, :class:`Report`, :func:`load_records`, :func:`store_for` (where
  a sweep's records go: full mode's store, or a resumable cache in CPU mode);
* :mod:`~compbook.runs.sweeps.cli`: the ``--backend local|ray --address ADDR`` options of every part's command.

Ray is optional (``pip install 'compbook[sweeps]'``); without it the ``local`` backend runs everything.
"""

from .cli import add_arguments, options
from .runner import Report, load_records, run, store_for
from .spec import Sweep, config_key

__all__ = ["Sweep", "Report", "run", "load_records", "store_for", "config_key", "add_arguments", "options"]
