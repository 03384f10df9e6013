"""Old import paths, kept working for one release (issue 20 moved Part A into :mod:`compbook.cppn`).

``import compbook.judges`` (or ``from compbook import train``) gives the *same* module object as its new home
(``compbook.cppn.judges``, ``compbook.cppn.train``), with a ``DeprecationWarning`` naming the new path; and
``python -m compbook.twins ...`` (or ``judges``, ``semantic``, ``labelling``, ``reread``, ``experiments``) runs
the command of ``python -m compbook.cppn``. :func:`install` puts the finder on ``sys.meta_path`` once; it loads
nothing until an old name is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module -> new module
MOVED = {f"compbook.{old}": f"compbook.{new}" for old, new in {
    "cppn": "cppn",   # was a module, is the package (which re-exports the network's names)
    "picbreeder": "cppn.picbreeder", "theory": "cppn.theory", "optim": "cppn.optim",
    "backprop": "cppn.backprop", "train": "cppn.train", "prune": "cppn.prune", "depth": "cppn.depth",
    "twins": "cppn.twins", "emc2": "cppn.emc2", "judges": "cppn.judges", "semantic": "cppn.judges.semantic",
    "vlm": "cppn.judges.vlm", "augment": "cppn.judges.augment", "labelling": "cppn.labelling",
    "agreement": "cppn.agreement", "panel": "cppn.panel", "reread": "cppn.reread",
    "experiments": "cppn.experiments", "claims": "cppn.claims"}.items() if old != new}
#: old module -> its command under ``python -m compbook.cppn``
COMMANDS = {f"compbook.{m}": m for m in ("twins", "judges", "semantic", "labelling", "reread", "experiments")}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the already-imported new module; runs the new command under ``python -m``."""

    def __init__(self, old: str, new: str):
        self.old, self.new, self._spec = old, new, None

    def create_module(self, spec):
        warnings.warn(f"{self.old} moved to {self.new}; the old name works for one release",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec   # the import system set it to the alias's spec: give the real one back

    def get_code(self, fullname):
        """What ``python -m <old name>`` runs: the new command line with the same arguments."""
        if fullname not in COMMANDS:
            raise ImportError(f"{fullname} has no command line; it moved to {MOVED[fullname]}")
        source = (f"import sys, warnings\nwarnings.warn('python -m {fullname} is now python -m compbook.cppn "
                  f"{COMMANDS[fullname]}', DeprecationWarning)\nfrom compbook.cppn.__main__ import main\n"
                  f"sys.exit(main([{COMMANDS[fullname]!r}, *sys.argv[1:]]))\n")
        return compile(source, f"<{fullname}: moved>", "exec")


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, _Alias(fullname, MOVED[fullname]))
        return None


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
