"""Part A: CPPNs in the narrow depth-connectivity regime (Do, Shah, Le, Liu 2026), chapters 1-9 and notes_part_a_claims.

Modules, in import order (a module imports only from the shared top of :mod:`compbook` and from the layers
before its own; ``tests/test_layout.py`` checks it). At this folder's top, the paper's ideas:

1. the networks: :mod:`.network` (the CPPN, chapter 1), :mod:`.picbreeder` (genomes, layerization),
   :mod:`.fer` (FER's published SGD networks), :mod:`.frames` (frames, coherence, the Welch bound: chapters 2
   and 4), :mod:`.volume_ratio` (the volume ratio rho(W, L): chapter 3); their files in :mod:`.data`
   (FER's repository files and pickles, :mod:`.data.store`: checkpoints of CPPNs);
2. training: :mod:`.optim` (Muon), :mod:`.backprop` (the trainer's gradient by hand), :mod:`.train`,
   :mod:`.prune` (SP pruning, chapter 6), :mod:`.twins` (SGD twins of the Picbreeder targets);
3. judging: :mod:`.emc2` (EMC2-Bench's perturbations and score, chapter 5), :mod:`.judges` (SSIM, cache,
   semantic, VLM), :mod:`.panel` (every judge on the same renders), :mod:`.depth` (PNG depth predictor and
   sweeps, chapter 7).

Then, in subpackages: the long runs, :mod:`.runs` (:mod:`.runs.experiments`: chapters 6-9 as functions, their
sweeps and full-mode times); the audit behind the notes chapters, :mod:`.audit` (blind verdicts:
:mod:`.audit.labelling`, :mod:`.audit.reader_labels`, :mod:`.audit.agreement`, :mod:`.audit.labellers`; the
re-reads :mod:`.audit.reread` and :mod:`.audit.counting`; :mod:`.audit.tables`, the tables chapters 3-9 show;
:mod:`.audit.claims`, the claims table); last :mod:`.exercises` and the command lines.

Command lines: ``python -m compbook.cppn <command>`` (:mod:`.__main__`). The network's names are importable
from here as before (``from compbook.cppn import CPPN, uniform_cppn``); importing this package loads nothing.
"""

from __future__ import annotations

#: the network's names, re-exported (``from compbook.cppn import CPPN``); a submodule is imported as usual
#: (``from compbook.cppn import train``)
_NETWORK = ("INPUT_NAMES", "COLOR_MODES", "ACTIVATIONS", "check_activation", "layout_from_counts",
            "coordinate_grid", "hsv_to_rgb", "outputs_to_rgb", "ActivationLayer", "grouped_layout",
            "active_runs", "init_weights", "CPPN", "uniform_cppn", "check_finite_outputs",
            "layer_activation_counts")
__all__ = list(_NETWORK)


def __getattr__(name):
    if name in _NETWORK:
        from . import network
        return getattr(network, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_NETWORK))
